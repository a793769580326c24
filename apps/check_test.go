package apps

import (
	"context"
	"errors"
	"testing"

	"gomr/mr"
)

// refusingClient fails the test if a job is run or the configuration
// read: arguments an app refuses are refused before anything runs.
type refusingClient struct{ t *testing.T }

func (c refusingClient) RunJob(context.Context, *mr.JobSpec) (*mr.JobResult, error) {
	c.t.Error("a job was run for refused arguments")
	return nil, errors.New("refused")
}

func (c refusingClient) Conf(string) string { return "" }

// TestAppsCheckArgs: every app has a Check, which refuses with a usage
// error the arguments Run refuses, and accepts good ones; mr local and mr
// submit call it before they start or reach a cluster.
func TestAppsCheckArgs(t *testing.T) {
	cases := map[string]struct{ bad, good [][]string }{
		"wordcount":    {bad: [][]string{{}, {"in"}}, good: [][]string{{"in", "out"}, {"a", "b", "out"}}},
		"grep":         {bad: [][]string{{"in", "out"}, {"in", "out", "("}, {"in", "out", "x", "1"}}, good: [][]string{{"in", "out", "x"}, {"in", "out", "(x)", "1"}}},
		"kmeansgen":    {bad: [][]string{{"1", "2", "3"}, {"0", "2", "3", "out"}}, good: [][]string{{"10", "2", "3", "out"}}},
		"kmeans":       {bad: [][]string{{"in", "out", "0", "1"}, {"in", "out", "2"}}, good: [][]string{{"in", "out", "2", "3"}}},
		"webgraph":     {bad: [][]string{{"x", "out"}, {"10"}}, good: [][]string{{"10k", "out"}}},
		"pagerank":     {bad: [][]string{{"g", "out", "0"}, {"g", "out"}}, good: [][]string{{"g", "out", "2"}}},
		"randomtext":   {bad: [][]string{{"x", "out"}, {"10"}}, good: [][]string{{"10m", "out"}}},
		"teragen":      {bad: [][]string{{"x", "out"}, {"10"}}, good: [][]string{{"10k", "out"}}},
		"sort":         {bad: [][]string{{"in"}, {"a", "b", "c"}}, good: [][]string{{"in", "out"}}},
		"terasort":     {bad: [][]string{{"in"}}, good: [][]string{{"in", "out"}}},
		"teravalidate": {bad: [][]string{{"in"}}, good: [][]string{{"in", "report"}}},
		"terasum":      {bad: [][]string{{"in"}}, good: [][]string{{"in", "report"}}},
		"sleep":        {bad: [][]string{{"-m", "0"}, {"extra"}, {"-x"}}, good: [][]string{{}, {"-m", "2", "-r", "0"}}},
		"fail":         {bad: [][]string{{"-m", "0"}, {"extra"}}, good: [][]string{{"-failMappers"}}},
		"replay":       {bad: [][]string{{}, {"-maps-ms", "x"}, {"-maps-ms", "10", "extra"}}, good: [][]string{{"-maps-ms", "10,20", "-reduces-ms", "5"}}},
		"dfsio":        {bad: [][]string{{"-write", "-read", "d", "r"}, {"-write", "d"}, {"-read", "-size", "x", "d", "r"}}, good: [][]string{{"-write", "-files", "2", "d", "r"}}},
	}
	for _, app := range mr.Apps() {
		c, ok := cases[app.Name]
		if !ok {
			t.Errorf("app %s: no test case", app.Name)
			continue
		}
		if app.Check == nil {
			t.Errorf("app %s has no Check", app.Name)
			continue
		}
		for _, args := range c.bad {
			var ue *mr.UsageError
			if err := app.CheckArgs(args); !errors.As(err, &ue) {
				t.Errorf("%s %q: Check gave %v, want a usage error", app.Name, args, err)
			}
			if err := app.Run(context.Background(), refusingClient{t}, args); !errors.As(err, &ue) {
				t.Errorf("%s %q: Run gave %v, want a usage error", app.Name, args, err)
			}
		}
		for _, args := range c.good {
			if err := app.CheckArgs(args); err != nil {
				t.Errorf("%s %q: Check refused good arguments: %v", app.Name, args, err)
			}
		}
	}
}
