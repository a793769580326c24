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

// variant is one configuration the jobs of terasort and wordcount run
// under (-variant): settings added to -D's, on the same data.
type variant struct {
	name    string
	defines []string
}

// suffix names a variant's result: "" for the only default one, else
// "[name]".
func (v variant) suffix() string {
	if v.name == "" {
		return ""
	}
	return "[" + v.name + "]"
}

// jobVariants returns the -variant settings, or the one default.
func (b *bench) jobVariants() []variant {
	if len(b.variants) == 0 {
		return []variant{{}}
	}
	return b.variants
}

// teraSort times terasort, once per variant, against GNU sort on the same
// records; every variant's output is checked.
func (b *bench) teraSort() ([]*result, error) {
	var rs []*result
	dir := filepath.Join(b.work, "tera")
	if err := os.MkdirAll(filepath.Join(dir, "sort-tmp"), 0o755); err != nil {
		return rs, fmt.Errorf("terasort: %w", err)
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "in")
	lines, sorted := filepath.Join(dir, "lines.txt"), filepath.Join(dir, "sorted.txt")
	rows := b.size / teraRecLen

	progress("terasort: teragen %d rows", rows)
	if _, err := b.exec(false, b.mrLocal("teragen", nil, "teragen", strconv.FormatInt(rows, 10), in)); err != nil {
		return rs, fmt.Errorf("terasort: generating the input: %w", err)
	}
	progress("terasort: writing the records' line form for sort")
	if n, err := writeTeraLines(in, lines); err != nil {
		return rs, fmt.Errorf("terasort: %w", err)
	} else if n != rows {
		return rs, fmt.Errorf("terasort: teragen wrote %d records, want %d", n, rows)
	}
	var baseline *procStats
	var baselineCmd string
	for i, v := range b.jobVariants() {
		r := &result{Name: "terasort" + v.suffix(), MaxRatio: 1.5}
		rs = append(rs, r)
		out := filepath.Join(dir, "out")
		progress("terasort: the job%s", v.suffix())
		job := b.mrLocal("terasort"+v.suffix(), append([]string{"mapreduce.job.reduces=" + strconv.Itoa(b.reduces)}, v.defines...), "terasort", in, out)
		r.JobCommand = job.String()
		var err error
		if r.Job, err = b.exec(true, job); err != nil {
			return rs, fmt.Errorf("terasort%s: %w", v.suffix(), err)
		}
		r.JobSeconds = r.Job.Wall.Seconds()

		if i == 0 {
			progress("terasort: GNU sort")
			sortCmd := command{path: "sort", env: []string{"LC_ALL=C"},
				args: []string{"--parallel=2", "-S", "100M", "-T", filepath.Join(dir, "sort-tmp"), "-o", sorted, lines},
				dir:  b.work, log: b.logPath("sort")}
			baselineCmd = sortCmd.String()
			if baseline, err = b.exec(true, sortCmd); err != nil {
				return rs, fmt.Errorf("terasort baseline: %w", err)
			}
		}
		r.BaselineCommand, r.Baseline, r.BaselineSeconds = baselineCmd, baseline, baseline.Wall.Seconds()

		progress("terasort: checking the output%s", v.suffix())
		if r.Check, err = b.checkTeraOutput(dir, in, out, sorted, rows); err != nil {
			return rs, fmt.Errorf("terasort%s: %w", v.suffix(), err)
		}
		os.RemoveAll(out)
		r.judge()
	}
	return rs, nil
}

// checkTeraOutput checks a terasort output against its input (teravalidate,
// terasum) and against GNU sort's, and says how.
func (b *bench) checkTeraOutput(dir, in, out, sorted string, rows int64) (string, error) {
	validate, insum := filepath.Join(dir, "validate"), filepath.Join(dir, "insum")
	defer os.RemoveAll(validate)
	defer os.RemoveAll(insum)
	if _, err := b.exec(false, b.mrLocal("teravalidate", nil, "teravalidate", out, validate)); err != nil {
		return "", fmt.Errorf("output: %w", err)
	}
	val, err := readTeraReport(validate)
	if err != nil {
		return "", fmt.Errorf("output: teravalidate: %w", err)
	}
	if len(val.errors) > 0 || val.records != rows {
		return "", fmt.Errorf("output: teravalidate counts %d records (want %d), %d order errors", val.records, rows, len(val.errors))
	}
	if _, err := b.exec(false, b.mrLocal("terasum", nil, "terasum", in, insum)); err != nil {
		return "", fmt.Errorf("input: %w", err)
	}
	sum, err := readTeraReport(insum)
	if err != nil {
		return "", fmt.Errorf("input: terasum: %w", err)
	}
	if sum.checksum != val.checksum || sum.records != val.records {
		return "", fmt.Errorf("output: %d records with checksum %s, the input %d with %s", val.records, val.checksum, sum.records, sum.checksum)
	}
	n, ties, err := checkTeraSort(out, sorted)
	if err != nil {
		return "", fmt.Errorf("output differs from sort's: %w", err)
	}
	return fmt.Sprintf("teravalidate: %d records in order, checksum %s equal to the input's (terasum); "+
		"all %d records equal GNU sort's lines in order (%d equal-key records in another order)", val.records, val.checksum, n, ties), nil
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

// wordCount times the wordcount job, once per variant, against the
// two-goroutine baseline; every variant's counts are checked.
func (b *bench) wordCount(text string) ([]*result, error) {
	var rs []*result
	dir := filepath.Dir(text)
	out, baseOut := filepath.Join(dir, "wc-out"), filepath.Join(dir, "wc-baseline.txt")
	defer os.RemoveAll(out)
	defer os.Remove(baseOut)
	var baseline *procStats
	var baselineCmd string
	for i, v := range b.jobVariants() {
		r := &result{Name: "wordcount" + v.suffix(), MaxRatio: 1.5}
		rs = append(rs, r)
		progress("wordcount: the job%s", v.suffix())
		job := b.mrLocal("wordcount"+v.suffix(), append([]string{"mapreduce.job.reduces=" + strconv.Itoa(b.reduces)}, v.defines...), "wordcount", text, out)
		r.JobCommand = job.String()
		var err error
		if r.Job, err = b.exec(true, job); err != nil {
			return rs, fmt.Errorf("wordcount%s: %w", v.suffix(), err)
		}
		r.JobSeconds = r.Job.Wall.Seconds()

		if i == 0 {
			progress("wordcount: the hand-written baseline")
			base := command{path: b.self, display: "mrbench", args: []string{baselineArg, "wordcount", text, baseOut}, dir: b.work, log: b.logPath("wordcount-baseline")}
			baselineCmd = base.String()
			if baseline, err = b.exec(true, base); err != nil {
				return rs, fmt.Errorf("wordcount baseline: %w", err)
			}
		}
		r.BaselineCommand, r.Baseline, r.BaselineSeconds = baselineCmd, baseline, baseline.Wall.Seconds()

		distinct, total, err := checkWordCount(out, baseOut)
		if err != nil {
			return rs, fmt.Errorf("wordcount%s output differs from the baseline's: %w", v.suffix(), err)
		}
		os.RemoveAll(out)
		r.Check = fmt.Sprintf("the job's counts equal the baseline's: %d distinct words, %d words", distinct, total)
		r.judge()
	}
	return rs, nil
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
