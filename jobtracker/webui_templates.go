package jobtracker

import "html/template"

// pages holds the parsed, immutable page templates.
var pages = template.Must(template.New("pages").Funcs(pageFuncs).Parse(pageTemplates))

// pageTemplates are the web UI's pages. Every table sits in a div.scroll,
// which scrolls horizontally, and long words (ids, paths) wrap, so that
// the pages fit the window (1,400 px and wider).
const pageTemplates = `
{{define "head"}}<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">
{{if .Refresh}}<meta http-equiv="refresh" content="{{.Refresh}}">
{{end}}{{if .Charts}}<link rel="stylesheet" href="/static/uPlot.min.css">
<script src="/static/uPlot.iife.min.js"></script>
<script src="/static/webui.js"></script>
{{end}}<style>
body { font-family: sans-serif; margin: 1em 2em; max-width: 100%; overflow-wrap: anywhere; }
nav { margin-bottom: 0.5em; padding-bottom: 4px; border-bottom: 1px solid #bbb; }
nav a { margin-right: 1em; }
.scroll { overflow-x: auto; max-width: 100%; margin-bottom: 1em; }
table { border-collapse: collapse; }
th, td { border: 1px solid #bbb; padding: 2px 8px; text-align: left; vertical-align: top; overflow-wrap: break-word; }
table.kv td, td.wrap { overflow-wrap: anywhere; }
th { background: #eee; }
td.n { text-align: right; white-space: nowrap; }
tr.attempt td:first-child { padding-left: 2em; }
pre { background: #f6f6f6; padding: 4px; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 40em; overflow-y: auto; }
.chart { margin-bottom: 1.5em; max-width: 100%; overflow: hidden; }
.chartnote { color: #555; font-size: 90%; }
.hover { font-family: monospace; font-size: 90%; min-height: 1.2em; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; margin: 0 3px 0 8px; vertical-align: middle; }
.refresh { float: right; font-size: 90%; color: #555; }
</style></head><body>
<nav><a href="/">Cluster</a><a href="/trackers">TaskTrackers</a><a href="/jobs">Jobs</a><a href="/history">Job history</a><a href="/api/cluster?page=1">JSON</a><a href="/metrics">Metrics</a>
{{if .Refreshable}}<span class="refresh">{{if .Refresh}}Refreshes every {{.Refresh}} s: <a href="{{.NoRefresh}}">stop</a>{{else}}Auto-refresh off{{end}}</span>{{end}}</nav>
{{end}}

{{define "jobs"}}<div class="scroll"><table>
<tr><th>Job</th><th>Name</th><th>User</th><th>Pool</th><th>Priority</th><th>State</th><th>Submitted</th><th>Finished</th>
<th>Map %</th><th>Maps (done/total)</th><th>Reduce %</th><th>Reduces (done/total)</th><th>Error</th></tr>
{{range .}}<tr><td><a href="/job?id={{.ID}}">{{.ID}}</a></td><td class="wrap">{{.Name}}</td><td>{{.User}}</td><td>{{.Pool}}</td>
<td>{{priority .Priority}}</td><td>{{.State}}{{if .Retired}} (retired){{end}}</td><td>{{when .Submit}}</td><td>{{when .Finish}}</td>
<td class="n">{{pct .MapProgress}}</td><td class="n">{{.Maps.Succeeded}}/{{.Maps.Total}}</td>
<td class="n">{{pct .ReduceProgress}}</td><td class="n">{{.Reduces.Succeeded}}/{{.Reduces.Total}}</td>
<td title="{{.Error}}">{{firstLine .Error}}</td></tr>
{{end}}</table></div>
{{end}}

{{define "pager"}}<p class="pager">{{if .From}}Showing {{.From}}-{{.To}} of {{.Matching}}, page {{.Page}} of {{.Pages}}.{{end}}
{{if .First}}<a href="{{.First}}">first</a> <a href="{{.Prev}}">previous</a>{{end}}
{{if .Next}}<a href="{{.Next}}">next</a> <a href="{{.Last}}">last</a>{{end}}</p>
{{end}}

{{define "statelinks"}}{{range $i, $c := .}}{{if $i}} · {{end}}{{if $c.Current}}<b>{{$c.Name}} ({{$c.Count}})</b>{{else}}<a href="{{$c.Link}}">{{$c.Name}}</a> ({{$c.Count}}){{end}}{{end}}{{end}}

{{define "sortlinks"}}{{range $i, $c := .}}{{if $i}} · {{end}}<a href="{{$c.Link}}">{{if $c.Current}}<b>{{$c.Name}}</b>{{else}}{{$c.Name}}{{end}}</a>{{end}}{{end}}

{{define "cluster"}}{{template "head" .Meta}}
<h1>gomr JobTracker</h1>
<p>At {{when .Time}} UTC. Scheduling policy: <b>{{.Policy}}</b>.
Map slots: {{.MapSlots}} ({{.RunningMaps}} running). Reduce slots: {{.ReduceSlots}} ({{.RunningReduces}} running).
Jobs: {{index .Jobs "RUNNING"}} running, {{index .Jobs "SUCCEEDED"}} succeeded, {{index .Jobs "FAILED"}} failed, {{index .Jobs "KILLED"}} killed.
<a href="/api/cluster?page=1">JSON</a> <a href="/api/jobs?page=1">jobs JSON</a> <a href="/metrics">metrics</a></p>

<h2>TaskTrackers</h2>
{{with .TrackerCounts}}<div class="scroll"><table>
<tr><th>Live</th><th>Blacklisted</th><th>Graylisted</th><th>Lost</th></tr>
<tr><td class="n"><a href="/trackers">{{.Live}}</a></td><td class="n"><a href="/trackers?state=blacklisted">{{.Blacklisted}}</a></td>
<td class="n"><a href="/trackers?state=graylisted">{{.Graylisted}}</a></td><td class="n"><a href="/trackers?state=lost">{{.Lost}}</a></td></tr>
</table></div>
{{end}}<h2>Slot occupancy by job</h2>
<div class="chart" id="occupancy" data-chart="occupancy" data-src="/api/cluster/occupancy"></div>
{{with .PolicyStatus}}{{if gt (len .Partitions) 1}}<h2>Slot occupancy by partition</h2>
<div class="chart" id="occupancy-partitions" data-chart="occupancy" data-by="partition" data-src="/api/cluster/occupancy"></div>
{{end}}{{end}}<h2>Running jobs ({{.Running.Matching}})</h2>
{{with .Running}}{{if .Jobs}}{{if .Next}}<p>The first {{len .Jobs}} by submission: <a href="/jobs?order=asc&amp;state=running">all {{.Matching}}</a>.</p>
{{end}}{{template "jobs" .Jobs}}{{else}}<p>None.</p>
{{end}}{{end}}
<h2>Finished jobs ({{.Finished.Matching}})</h2>
{{with .Finished}}{{if .Jobs}}{{if .Next}}<p>The latest {{len .Jobs}} to finish: <a href="/jobs?sort=finish&amp;state=finished">all {{.Matching}}</a>.</p>
{{end}}{{template "jobs" .Jobs}}{{else}}<p>None.</p>
{{end}}{{end}}<p><a href="/jobs">All jobs</a>, <a href="/history">all finished jobs in the job history</a></p>
<h2>Policy {{.Policy}}</h2>
{{$c := .Columns}}{{with .PolicyStatus}}{{if .Partitions}}<h3>Partitions</h3>
<div class="scroll"><table>
<tr><th>Partition</th>{{if $c.Capacity}}<th>Capacity</th><th>Map slots</th><th>Reduce slots</th>{{end}}<th>Running maps</th><th>Running reduces</th>{{if $c.Timer}}<th>Timer</th>{{end}}<th>Jobs</th></tr>
{{range .Partitions}}<tr><td class="n">{{.Index}}</td>{{if $c.Capacity}}<td class="n">{{pct .Capacity}}</td><td class="n">{{.MapSlots}}</td><td class="n">{{.ReduceSlots}}</td>{{end}}
<td class="n">{{.RunningMaps}}</td><td class="n">{{.RunningReduces}}</td>{{if $c.Timer}}<td>{{if .Timer}}{{dur .Timer}}{{else}}none{{end}}</td>{{end}}<td class="n">{{.Jobs}}</td></tr>
{{end}}</table></div>
{{end}}{{if .Pools}}<h3>Pools</h3>
<div class="scroll"><table>
<tr><th>Pool</th><th>Weight</th><th>Min maps</th><th>Min reduces</th><th>Fair share maps</th><th>Fair share reduces</th></tr>
{{range .Pools}}<tr><td>{{.Name}}</td><td class="n">{{printf "%.2f" .Weight}}</td><td class="n">{{.MinMaps}}</td><td class="n">{{.MinReduces}}</td>
<td class="n">{{printf "%.2f" .FairShareMaps}}</td><td class="n">{{printf "%.2f" .FairShareReduces}}</td></tr>
{{end}}</table></div>
{{end}}<h3>Jobs in the policy's order ({{$.PolicyJobsTotal}})</h3>
{{if gt $.PolicyJobsTotal (len $.PolicyJobs)}}<p>The first {{len $.PolicyJobs}}: <a href="/api/cluster?size=1">/api/cluster</a>'s policy_status lists them all.</p>
{{end}}{{if $.PolicyJobs}}<div class="scroll"><table>
<tr><th>Job</th>{{if $c.Queue}}<th>Queue</th>{{end}}{{if $c.Pool}}<th>Pool</th>{{end}}{{if $c.Service}}<th>Service in queue</th><th>Service</th>{{end}}{{if $c.FairShare}}<th>Fair share maps</th><th>Fair share reduces</th>{{end}}{{if $c.Deadline}}<th>Deadline</th>{{end}}{{if $c.Quota}}<th>Min maps</th><th>Min reduces</th><th>Feasible</th>{{end}}</tr>
{{range $.PolicyJobs}}<tr><td><a href="/job?id={{.ID}}">{{.ID}}</a></td>{{if $c.Queue}}<td class="n">{{.Queue}}</td>{{end}}{{if $c.Pool}}<td>{{.Pool}}</td>{{end}}{{if $c.Service}}<td>{{dur .PartialSize}}</td><td>{{dur .Service}}</td>{{end}}{{if $c.FairShare}}<td class="n">{{printf "%.2f" .FairShareMaps}}</td><td class="n">{{printf "%.2f" .FairShareReduces}}</td>{{end}}{{if $c.Deadline}}<td>{{when .Deadline}}</td>{{end}}{{if $c.Quota}}<td class="n">{{.MinMaps}}</td><td class="n">{{.MinReduces}}</td><td>{{if .Feasible}}yes{{else}}no{{end}}</td>{{end}}</tr>
{{end}}</table></div>
{{end}}{{if .Counters}}<h3>Policy counters</h3>
<div class="scroll"><table>
{{range $name, $v := .Counters}}<tr><td>{{$name}}</td><td class="n">{{$v}}</td></tr>
{{end}}</table></div>
{{end}}{{else}}<p>Policy {{.Policy}} does not describe its state.</p>
{{end}}</body></html>
{{end}}

{{define "counters"}}{{if .}}<div class="scroll"><table>
<tr><th>Group</th><th>Counter</th><th>Value</th></tr>
{{range .}}{{$g := .Name}}{{range .Counters}}<tr><td>{{$g}}</td><td>{{.Name}}</td><td class="n">{{.Value}}</td></tr>
{{end}}{{end}}</table></div>
{{else}}<p>None.</p>
{{end}}{{end}}

{{define "job"}}{{template "head" .Meta}}
<p><a href="/api/job?id={{.ID}}">JSON</a> <a href="/api/job/timeline?id={{.ID}}">timeline JSON</a></p>
<h1>Job {{.ID}}</h1>
<div class="scroll"><table class="kv">
<tr><th>Name</th><td>{{.Name}}</td></tr>
<tr><th>User</th><td>{{.User}}</td></tr>
<tr><th>Pool</th><td>{{.Pool}}</td></tr>
<tr><th>Priority</th><td>{{priority .Priority}}</td></tr>
<tr><th>State</th><td>{{.State}}{{if .Retired}} (retired){{end}}</td></tr>
<tr><th>Output</th><td>{{.Output}}</td></tr>
<tr><th>Submitted</th><td>{{when .Submit}}</td></tr>
<tr><th>Started</th><td>{{when .Start}}</td></tr>
<tr><th>Finished</th><td>{{when .Finish}}</td></tr>
<tr><th>Elapsed</th><td>{{elapsed .Start .Finish .Now}}</td></tr>
{{if not .Deadline.IsZero}}<tr><th>Deadline</th><td>{{when .Deadline}}</td></tr>
{{end}}<tr><th>Map progress</th><td>{{pct .MapProgress}} (<a href="{{tasks .ID "map" "succeeded"}}">{{.Maps.Succeeded}}</a>/<a href="{{tasks .ID "map" ""}}">{{.Maps.Total}}</a> done, <a href="{{tasks .ID "map" "running"}}">{{.Maps.Running}} running</a>, <a href="{{tasks .ID "map" "pending"}}">{{.Maps.Pending}} pending</a>, <a href="{{tasks .ID "map" "failed"}}">{{.Maps.Failed}} failed</a>, <a href="{{tasks .ID "map" "killed"}}">{{.Maps.Killed}} killed</a>)</td></tr>
<tr><th>Reduce progress</th><td>{{pct .ReduceProgress}} (<a href="{{tasks .ID "reduce" "succeeded"}}">{{.Reduces.Succeeded}}</a>/<a href="{{tasks .ID "reduce" ""}}">{{.Reduces.Total}}</a> done, <a href="{{tasks .ID "reduce" "running"}}">{{.Reduces.Running}} running</a>, <a href="{{tasks .ID "reduce" "pending"}}">{{.Reduces.Pending}} pending</a>, <a href="{{tasks .ID "reduce" "failed"}}">{{.Reduces.Failed}} failed</a>, <a href="{{tasks .ID "reduce" "killed"}}">{{.Reduces.Killed}} killed</a>)</td></tr>
</table></div>
{{if .Error}}<h2>Error</h2>
<pre>{{.Error}}</pre>
{{end}}
<h2>Counters</h2>
{{template "counters" .Counters}}
{{if .Speculations}}<h2>Speculative attempts ({{len .Speculations}})</h2>
<div class="scroll"><table>
<tr><th>Task</th><th>Kind</th><th>Of</th><th>Attempt</th><th>Decided</th><th>Outcome</th><th>Estimates</th></tr>
{{range .Speculations}}<tr><td><a href="/task?id={{.Task}}">{{.Task}}</a></td><td>{{.Kind}}</td><td><a href="/attempt?id={{.SourceAttempt}}">{{.SourceAttempt}}</a></td><td>{{if .Attempt}}<a href="/attempt?id={{.Attempt}}">{{.Attempt}}</a>{{end}}</td><td>{{when .Decided}}</td><td>{{.Outcome}}</td><td>{{.Explanation}}{{if .Note}}<br><i>{{.Note}}</i>{{end}}</td></tr>
{{end}}</table></div>
{{end}}<h2 id="tasks">Tasks{{with .List}}{{if .Filter.Type}}: {{.Filter}}{{else if .Filter.State}}: {{.Filter}}{{end}} ({{.Matching}} of {{.Total}}){{end}}</h2>
{{if .FromHistory}}<p>The job is retired: its tasks are shown from its history file.</p>
{{end}}{{$id := .ID}}<p class="filters">Show: <a href="{{tasks $id "" ""}}">all</a> · map: <a href="{{tasks $id "map" ""}}">all</a>
{{range $s := states}}<a href="{{tasks $id "map" $s}}">{{$s}}</a> {{end}}· reduce: <a href="{{tasks $id "reduce" ""}}">all</a>
{{range $s := states}}<a href="{{tasks $id "reduce" $s}}">{{$s}}</a> {{end}}</p>
{{with .List}}{{if .Tasks}}{{template "pager" .}}<div class="scroll"><table>
<tr><th>Task / attempt</th><th>Tracker</th><th>State</th><th>Progress</th><th>Phase</th><th>Started</th><th>Finished</th><th>Error</th></tr>
{{range .Tasks}}<tr class="task"><td><b><a href="/task?id={{.ID}}">{{.ID}}</a></b></td><td></td><td>{{.State}}</td><td class="n">{{pct .Progress}}</td><td></td><td></td><td></td>
<td title="{{.Error}}">{{if .Failures}}{{.Failures}} failed: {{firstLine .Error}}{{end}}</td></tr>
{{range .Attempts}}<tr class="attempt"><td><a href="/attempt?id={{.ID}}">{{.ID}}</a> <a href="/tasklog?attemptid={{.ID}}&amp;filter=stdout">stdout</a> <a href="/tasklog?attemptid={{.ID}}&amp;filter=stderr">stderr</a></td><td>{{.Tracker}}</td><td>{{.State}}</td><td class="n">{{pct .Progress}}</td><td>{{.Phase}}</td>
<td>{{when .Start}}</td><td>{{when .Finish}}</td><td title="{{.Error}}">{{firstLine .Error}}</td></tr>
{{end}}{{end}}</table></div>
{{else if .Total}}<p>No {{.Filter}}.</p>
{{end}}{{end}}{{if not .Tasks}}{{if .Retired}}<p>The job is retired: the JobTracker keeps its summary only; <code>mr job -history {{.ID}}</code> prints its attempts.</p>
{{else}}<p>The job has no tasks.</p>
{{end}}{{end}}
<h2>Task timeline</h2>
<p class="chartnote">One row per tracker slot (attempts of a tracker packed into the fewest rows); drag to zoom, double-click to reset.</p>
<div class="chart" id="timeline" data-chart="timeline" data-src="/api/job/timeline?id={{.ID}}"></div>
<h2>Progress</h2>
<div class="chart" id="progress" data-chart="progress" data-src="/api/job/timeline?id={{.ID}}"></div>
</body></html>
{{end}}

{{define "attemptrows"}}{{$x := .Extras}}{{range .Task.Attempts}}<tr><td><a href="/attempt?id={{.ID}}">{{.ID}}</a>{{with index $x .ID}}{{if .Speculative}} (speculative){{end}}{{if .Cloned}} (cloned){{end}}{{end}}</td>
<td><a href="/tasklog?attemptid={{.ID}}&amp;filter=stdout">stdout</a> <a href="/tasklog?attemptid={{.ID}}&amp;filter=stderr">stderr</a></td>
<td>{{if index $.Live .Tracker}}<a href="/tracker?name={{.Tracker}}">{{.Tracker}}</a>{{else}}{{.Tracker}}{{end}}</td><td>{{.State}}</td><td class="n">{{pct .Progress}}</td><td>{{.Phase}}</td>
<td>{{when .Start}}</td><td>{{when .ShuffleFinish}}</td><td>{{when .SortFinish}}</td><td>{{when .Finish}}</td><td>{{elapsed .Start .Finish $.Now}}</td>
<td title="{{.Error}}">{{firstLine .Error}}</td>
<td class="wrap">{{with index $x .ID}}{{range $g, $m := .Counters}}{{range $n, $v := $m}}{{$n}}={{$v}} {{end}}{{end}}{{end}}</td></tr>
{{end}}{{end}}

{{define "task"}}{{template "head" .Meta}}
<p>Job <a href="/job?id={{.Job.ID}}">{{.Job.ID}}</a> ({{.Job.Name}}, {{.Job.State}})</p>
<h1>Task {{.Task.ID}}</h1>
<p>{{.Task.Type}} {{.Task.Index}}: {{.Task.State}}, {{pct .Task.Progress}}{{if .Task.Failures}}, {{.Task.Failures}} failed attempts{{end}}.</p>
{{if .Task.Error}}<pre>{{.Task.Error}}</pre>
{{end}}<h2>Attempts ({{len .Task.Attempts}})</h2>
{{if .Task.Attempts}}<div class="scroll"><table>
<tr><th>Attempt</th><th>Logs</th><th>Tracker</th><th>State</th><th>Progress</th><th>Phase</th><th>Started</th><th>Shuffle finished</th><th>Sort finished</th><th>Finished</th><th>Elapsed</th><th>Error</th><th>Counters</th></tr>
{{template "attemptrows" .}}</table></div>
{{else}}<p>None yet.</p>
{{end}}</body></html>
{{end}}

{{define "attempt"}}{{template "head" .Meta}}
<p>Job <a href="/job?id={{.Job.ID}}">{{.Job.ID}}</a> ({{.Job.Name}}, {{.Job.State}}), task <a href="/task?id={{.Task.ID}}">{{.Task.ID}}</a></p>
<h1>Attempt {{.Attempt.ID}}</h1>
<div class="scroll"><table class="kv">
<tr><th>Tracker</th><td>{{if index .Live .Attempt.Tracker}}<a href="/tracker?name={{.Attempt.Tracker}}">{{.Attempt.Tracker}}</a>{{else}}{{.Attempt.Tracker}} (not live){{end}}</td></tr>
<tr><th>State</th><td>{{.Attempt.State}}{{if .Extra.Speculative}} (speculative){{end}}{{if .Extra.Cloned}} (cloned){{end}}</td></tr>
<tr><th>Progress</th><td>{{pct .Attempt.Progress}}{{if .Attempt.Phase}} ({{.Attempt.Phase}}){{end}}</td></tr>
<tr><th>Started</th><td>{{when .Attempt.Start}}</td></tr>
{{if not .Attempt.ShuffleFinish.IsZero}}<tr><th>Shuffle finished</th><td>{{when .Attempt.ShuffleFinish}}</td></tr>
{{end}}{{if not .Attempt.SortFinish.IsZero}}<tr><th>Sort finished</th><td>{{when .Attempt.SortFinish}}</td></tr>
{{end}}<tr><th>Finished</th><td>{{when .Attempt.Finish}}</td></tr>
</table></div>
<h2>Diagnostic</h2>
{{if .Attempt.Error}}<pre>{{.Attempt.Error}}</pre>{{else}}<p>None.</p>{{end}}
<h2>Counters</h2>
{{template "counters" .Counters}}
{{range .Logs}}<h2>{{.Filter}}</h2>
{{if .Error}}<p>Not available: {{.Error}}</p>
{{else}}<p><a href="/tasklog?attemptid={{$.Attempt.ID}}&amp;filter={{.Filter}}">whole log</a>{{if .Truncated}} (the last 64 KiB below){{end}}</p>
{{if .Text}}<pre>{{.Text}}</pre>{{else}}<p>Empty.</p>{{end}}
{{end}}{{end}}</body></html>
{{end}}

{{define "trackers"}}{{template "head" .Meta}}
<h1>TaskTrackers: {{.Query.State}} ({{.Matching}})</h1>
<p>State: {{template "statelinks" .States}}. Sort by: {{template "sortlinks" .Sorts}}.</p>
{{if .Rows}}{{template "pager" .}}{{$lost := eq .Query.State "lost"}}<div class="scroll"><table>
<tr><th>Tracker</th><th>Host</th><th>Map slots</th><th>Reduce slots</th><th>Running maps</th><th>Running reduces</th>
<th>Last heartbeat</th><th>CRIU</th><th>Blacklisted</th><th>Faults</th><th>Lost replies</th>{{if $lost}}<th>Lost at</th>{{end}}</tr>
{{range .Rows}}<tr class="tracker"><td>{{if $lost}}{{.Name}}{{else}}<a href="/tracker?name={{.Name}}">{{.Name}}</a>{{end}}</td><td>{{.Host}}</td><td class="n">{{.MapSlots}}</td><td class="n">{{.ReduceSlots}}</td>
<td class="n">{{.RunningMaps}}</td><td class="n">{{.RunningReduces}}</td><td>{{secs .LastHeartbeatAgeSeconds}} ago</td>
<td>{{if .CRIU}}yes{{else}}no{{end}}</td><td>{{if .Blacklisted}}yes: {{.BlacklistReason}}{{else}}no{{end}}</td><td class="n">{{.Faults}}</td><td class="n">{{.LostReplies}}</td>{{if $lost}}<td>{{when .LostAt}}</td>{{end}}</tr>
{{end}}</table></div>
{{else}}<p>No {{.Query.State}} TaskTracker.</p>
{{end}}</body></html>
{{end}}

{{define "jobspage"}}{{template "head" .Meta}}
<h1>Jobs: {{.Query.State}} ({{.Matching}})</h1>
<p>State: {{template "statelinks" .States}}. Sort by: {{template "sortlinks" .Sorts}}.</p>
{{if .Jobs}}{{template "pager" .}}{{template "jobs" .Jobs}}{{else}}<p>No {{if ne .Query.State "all"}}{{.Query.State}} {{end}}job.</p>
{{end}}<p><a href="/history">All finished jobs in the job history</a></p>
</body></html>
{{end}}

{{define "tracker"}}{{template "head" .Meta}}
<h1>TaskTracker {{.Name}}</h1>
<div class="scroll"><table class="kv">
<tr><th>Host</th><td>{{.Host}}</td></tr>
<tr><th>Shuffle address</th><td>{{.ShuffleAddress}}</td></tr>
<tr><th>Map slots</th><td>{{.MapSlots}} ({{.RunningMaps}} running)</td></tr>
<tr><th>Reduce slots</th><td>{{.ReduceSlots}} ({{.RunningReduces}} running)</td></tr>
<tr><th>Last heartbeat</th><td>{{when .LastHeartbeat}} ({{secs .LastHeartbeatAgeSeconds}} ago)</td></tr>
<tr><th>CRIU</th><td>{{if .CRIU}}yes{{else}}no{{end}}</td></tr>
<tr><th>Blacklisted</th><td>{{if .Blacklisted}}yes: {{.BlacklistReason}}{{else}}no{{end}}</td></tr>
<tr><th>Faults (in the blacklisting window)</th><td>{{.Faults}}</td></tr>
<tr><th>Lost heartbeat replies</th><td>{{.LostReplies}}</td></tr>
</table></div>
<h2>Running attempts ({{len .Attempts}})</h2>
{{if .Attempts}}<div class="scroll"><table>
<tr><th>Attempt</th><th>Job</th><th>Task</th><th>State</th><th>Progress</th><th>Phase</th><th>Started</th></tr>
{{range .Attempts}}<tr><td><a href="/attempt?id={{.ID}}">{{.ID}}</a></td><td><a href="/job?id={{.Job}}">{{.Job}}</a></td><td><a href="/task?id={{.Task}}">{{.Task}}</a></td>
<td>{{.State}}</td><td class="n">{{pct .Progress}}</td><td>{{.Phase}}</td><td>{{when .Start}}</td></tr>
{{end}}</table></div>
{{else}}<p>None.</p>
{{end}}</body></html>
{{end}}

{{define "history"}}{{template "head" .Meta}}
<h1>Job history</h1>
{{if .Error}}<p>{{.Error}}</p>
{{end}}<p>{{.Total}} finished jobs in the history directory, the newest first.</p>
{{if .Jobs}}{{template "pager" .}}<div class="scroll"><table>
<tr><th>Job</th><th>Name</th><th>User</th><th>Queue</th><th>State</th><th>Submitted</th><th>Started</th><th>Finished</th><th>Elapsed</th><th>Maps</th><th>Reduces</th><th>Error</th></tr>
{{range .Jobs}}<tr><td><a href="/job?id={{.ID}}">{{.ID}}</a></td><td class="wrap">{{.Name}}</td><td>{{.User}}</td><td>{{.Queue}}</td><td>{{.State}}</td>
<td>{{when .Submit}}</td><td>{{when .Start}}</td><td>{{when .Finish}}</td><td>{{elapsed .Start .Finish .Finish}}</td><td class="n">{{.Maps}}</td><td class="n">{{.Reduces}}</td><td title="{{.Error}}">{{firstLine .Error}}</td></tr>
{{end}}</table></div>
{{end}}</body></html>
{{end}}
`
