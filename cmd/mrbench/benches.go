package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// mrLocal builds "mr local --trackers N [-D k=v]... app args...".
func (b *bench) mrLocal(logName string, defines []string, app ...string) command {
	args := []string{"local", "--trackers", strconv.Itoa(b.trackers)}
	for _, d := range append(append([]string(nil), b.defines...), defines...) {
		args = append(args, "-D", d)
	}
	return command{path: b.bin, args: append(args, app...), dir: b.work, log: b.logPath(logName)}
}

// logPath names the log file of a command.
func (b *bench) logPath(name string) string {
	return filepath.Join(b.work, "logs", name+".log")
}

// exec runs a command, recording its command line (marked if timed).
func (b *bench) exec(timed bool, c command) (*procStats, error) {
	mark := "  "
	if timed {
		mark = "* "
	}
	b.commands = append(b.commands, mark+c.String())
	if err := os.MkdirAll(filepath.Dir(c.log), 0o755); err != nil {
		return nil, fmt.Errorf("creating the log directory: %w", err)
	}
	return b.run(c)
}

// teraSort times terasort against GNU sort on the same records.
func (b *bench) teraSort() (*result, error) {
	r := &result{Name: "terasort", MaxRatio: 1.5}
	dir := filepath.Join(b.work, "tera")
	if err := os.MkdirAll(filepath.Join(dir, "sort-tmp"), 0o755); err != nil {
		return r, fmt.Errorf("terasort: %w", err)
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	lines, sorted := filepath.Join(dir, "lines.txt"), filepath.Join(dir, "sorted.txt")
	rows := b.size / teraRecLen

	progress("terasort: teragen %d rows", rows)
	if _, err := b.exec(false, b.mrLocal("teragen", nil, "teragen", strconv.FormatInt(rows, 10), in)); err != nil {
		return r, fmt.Errorf("terasort: generating the input: %w", err)
	}
	progress("terasort: writing the records' line form for sort")
	if n, err := writeTeraLines(in, lines); err != nil {
		return r, fmt.Errorf("terasort: %w", err)
	} else if n != rows {
		return r, fmt.Errorf("terasort: teragen wrote %d records, want %d", n, rows)
	}

	progress("terasort: the job")
	job := b.mrLocal("terasort", []string{"mapreduce.job.reduces=" + strconv.Itoa(b.reduces)}, "terasort", in, out)
	r.JobCommand = job.String()
	var err error
	if r.Job, err = b.exec(true, job); err != nil {
		return r, fmt.Errorf("terasort: %w", err)
	}
	r.JobSeconds = r.Job.Wall.Seconds()

	progress("terasort: GNU sort")
	sortCmd := command{path: "sort", env: []string{"LC_ALL=C"},
		args: []string{"--parallel=2", "-S", "100M", "-T", filepath.Join(dir, "sort-tmp"), "-o", sorted, lines},
		dir:  b.work, log: b.logPath("sort")}
	r.BaselineCommand = sortCmd.String()
	if r.Baseline, err = b.exec(true, sortCmd); err != nil {
		return r, fmt.Errorf("terasort baseline: %w", err)
	}
	r.BaselineSeconds = r.Baseline.Wall.Seconds()

	progress("terasort: checking the output")
	if _, err := b.exec(false, b.mrLocal("teravalidate", nil, "teravalidate", out, filepath.Join(dir, "validate"))); err != nil {
		return r, fmt.Errorf("terasort output: %w", err)
	}
	val, err := readTeraReport(filepath.Join(dir, "validate"))
	if err != nil {
		return r, fmt.Errorf("terasort output: teravalidate: %w", err)
	}
	if len(val.errors) > 0 || val.records != rows {
		return r, fmt.Errorf("terasort output: teravalidate counts %d records (want %d), %d order errors", val.records, rows, len(val.errors))
	}
	if _, err := b.exec(false, b.mrLocal("terasum", nil, "terasum", in, filepath.Join(dir, "insum"))); err != nil {
		return r, fmt.Errorf("terasort input: %w", err)
	}
	sum, err := readTeraReport(filepath.Join(dir, "insum"))
	if err != nil {
		return r, fmt.Errorf("terasort input: terasum: %w", err)
	}
	if sum.checksum != val.checksum || sum.records != val.records {
		return r, fmt.Errorf("terasort output: %d records with checksum %s, the input %d with %s", val.records, val.checksum, sum.records, sum.checksum)
	}
	n, ties, err := checkTeraSort(out, sorted)
	if err != nil {
		return r, fmt.Errorf("terasort output differs from sort's: %w", err)
	}
	r.Check = fmt.Sprintf("teravalidate: %d records in order, checksum %s equal to the input's (terasum); "+
		"all %d records equal GNU sort's lines in order (%d equal-key records in another order)", val.records, val.checksum, n, ties)
	r.judge()
	return r, nil
}

// makeText writes the text input of wordcount and grep.
func (b *bench) makeText() (string, error) {
	dir := filepath.Join(b.work, "text")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("text input: %w", err)
	}
	path := filepath.Join(dir, "input.txt")
	progress("text: generating %s of Zipf-distributed words", humanBytes(b.size))
	n, err := writeText(path, b.size)
	if err != nil {
		return "", err
	}
	b.commands = append(b.commands, fmt.Sprintf("  (mrbench writes %s: %d bytes, %d-word vocabulary, Zipf s=%.1f)", path, n, vocabSize, zipfS))
	return path, nil
}

// wordCount times the wordcount job against the two-goroutine baseline.
func (b *bench) wordCount(text string) (*result, error) {
	r := &result{Name: "wordcount", MaxRatio: 1.5}
	dir := filepath.Dir(text)
	out, baseOut := filepath.Join(dir, "wc-out"), filepath.Join(dir, "wc-baseline.txt")
	defer os.RemoveAll(out)
	defer os.Remove(baseOut)

	progress("wordcount: the job")
	job := b.mrLocal("wordcount", []string{"mapreduce.job.reduces=" + strconv.Itoa(b.reduces)}, "wordcount", text, out)
	r.JobCommand = job.String()
	var err error
	if r.Job, err = b.exec(true, job); err != nil {
		return r, fmt.Errorf("wordcount: %w", err)
	}
	r.JobSeconds = r.Job.Wall.Seconds()

	progress("wordcount: the hand-written baseline")
	base := command{path: b.self, display: "mrbench", args: []string{baselineArg, "wordcount", text, baseOut}, dir: b.work, log: b.logPath("wordcount-baseline")}
	r.BaselineCommand = base.String()
	if r.Baseline, err = b.exec(true, base); err != nil {
		return r, fmt.Errorf("wordcount baseline: %w", err)
	}
	r.BaselineSeconds = r.Baseline.Wall.Seconds()

	distinct, total, err := checkWordCount(out, baseOut)
	if err != nil {
		return r, fmt.Errorf("wordcount output differs from the baseline's: %w", err)
	}
	r.Check = fmt.Sprintf("the job's counts equal the baseline's: %d distinct words, %d words", distinct, total)
	r.judge()
	return r, nil
}

// grep times the grep app (its two jobs) against the single-threaded
// baseline.
func (b *bench) grep(text string) (*result, error) {
	r := &result{Name: "grep", MaxRatio: 2}
	dir := filepath.Dir(text)
	out, baseOut := filepath.Join(dir, "grep-out"), filepath.Join(dir, "grep-baseline.txt")
	defer os.RemoveAll(out)
	defer os.Remove(baseOut)

	progress("grep: the job")
	job := b.mrLocal("grep", nil, "grep", text, out, b.regex)
	r.JobCommand = job.String()
	var err error
	if r.Job, err = b.exec(true, job); err != nil {
		return r, fmt.Errorf("grep: %w", err)
	}
	r.JobSeconds = r.Job.Wall.Seconds()

	progress("grep: the hand-written baseline")
	base := command{path: b.self, display: "mrbench", args: []string{baselineArg, "grep", text, baseOut, b.regex}, dir: b.work, log: b.logPath("grep-baseline")}
	r.BaselineCommand = base.String()
	if r.Baseline, err = b.exec(true, base); err != nil {
		return r, fmt.Errorf("grep baseline: %w", err)
	}
	r.BaselineSeconds = r.Baseline.Wall.Seconds()

	distinct, total, err := checkGrep(out, baseOut)
	if err != nil {
		return r, fmt.Errorf("grep output differs from the baseline's: %w", err)
	}
	r.Check = fmt.Sprintf("the job's output equals the baseline's byte for byte: %d distinct matches of %q, %d matches", distinct, b.regex, total)
	r.judge()
	return r, nil
}
