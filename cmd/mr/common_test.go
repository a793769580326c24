package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestTakeAppDefines(t *testing.T) {
	tests := []struct {
		name     string
		before   []string // -D given before the app name
		args     []string
		wantArgs []string
		wantDefs []string
		wantErr  string
	}{
		{name: "none", args: []string{"in", "out"}, wantArgs: []string{"in", "out"}},
		{name: "empty", args: nil},
		{name: "at the end", args: []string{"in", "out", "-D", "mapreduce.job.reduces=3"},
			wantArgs: []string{"in", "out"}, wantDefs: []string{"mapreduce.job.reduces=3"}},
		{name: "first, joined, between", args: []string{"-D", "a=1", "in", "-Db=2", "out", "-D=c=3", "--define", "d=4", "--define=e=5=6"},
			wantArgs: []string{"in", "out"}, wantDefs: []string{"a=1", "b=2", "c=3", "d=4", "e=5=6"}},
		{name: "empty value", args: []string{"in", "-D", "mapreduce.job.name="},
			wantArgs: []string{"in"}, wantDefs: []string{"mapreduce.job.name="}},
		{name: "after those before the app name", before: []string{"mapreduce.job.reduces=2"}, args: []string{"in", "-D", "mapreduce.job.reduces=3"},
			wantArgs: []string{"in"}, wantDefs: []string{"mapreduce.job.reduces=2", "mapreduce.job.reduces=3"}},
		{name: "app flags left alone", args: []string{"-m", "1", "-r", "0", "-mt", "0", "-d", "-", "-x=y"},
			wantArgs: []string{"-m", "1", "-r", "0", "-mt", "0", "-d", "-", "-x=y"}},
		{name: "-DD", args: []string{"-m", "1", "-DD"},
			wantErr: `-DD among the app's arguments: definition "D": want key=value`},
		{name: "app flags with a define", args: []string{"-m", "1", "-D", "x=y", "-r", "0", "-mt", "0"},
			wantArgs: []string{"-m", "1", "-r", "0", "-mt", "0"}, wantDefs: []string{"x=y"}},
		{name: "dashes end the scan", args: []string{"in", "out", "-D", "a=1", "--", "-Dx", "-D", "b=2", "--"},
			wantArgs: []string{"in", "out", "-Dx", "-D", "b=2", "--"}, wantDefs: []string{"a=1"}},
		{name: "lone dashes", args: []string{"--"}, wantArgs: nil},
		{name: "-D last", args: []string{"in", "out", "-D"}, wantErr: "-D at the end of the app's arguments: want -D key=value"},
		{name: "--define last", args: []string{"in", "--define"}, wantErr: "--define at the end of the app's arguments: want --define key=value"},
		{name: "-D without =", args: []string{"in", "-D", "out"}, wantErr: `-D among the app's arguments: definition "out": want key=value (put -- before app arguments that start with -D)`},
		{name: "joined without =", args: []string{"in", "-Dfoo", "out"}, wantErr: `-Dfoo among the app's arguments: definition "foo": want key=value`},
		{name: "empty key", args: []string{"-D", "=1"}, wantErr: `definition "=1": empty key before '='`},
		{name: "bare -D=", args: []string{"-D="}, wantErr: `definition "": want key=value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cf := confFlags{defines: tt.before}
			got, err := cf.takeAppDefines(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("takeAppDefines(%q) error = %v, want one containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("takeAppDefines(%q): %v", tt.args, err)
			}
			if !reflect.DeepEqual(got, tt.wantArgs) {
				t.Errorf("app args %q, want %q", got, tt.wantArgs)
			}
			if !reflect.DeepEqual(cf.defines, tt.wantDefs) {
				t.Errorf("defines %q, want %q", cf.defines, tt.wantDefs)
			}
		})
	}
}

// TestAppDefinesOverride: a -D after the app name wins over one before
// it, and an unknown key there is refused as one before it would be.
func TestAppDefinesOverride(t *testing.T) {
	cf := confFlags{defines: []string{"mapreduce.job.reduces=2"}}
	if _, err := cf.takeAppDefines([]string{"in", "-D", "mapreduce.job.reduces=3"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := cf.load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Int("mapreduce.job.reduces"); got != 3 {
		t.Errorf("mapreduce.job.reduces = %d, want 3", got)
	}
	cf = confFlags{}
	if _, err := cf.takeAppDefines([]string{"in", "-D", "mapreduce.job.reducez=3"}); err != nil {
		t.Fatal(err)
	}
	_, err = cf.load(nil)
	if want := `unknown configuration key "mapreduce.job.reducez" in -D (did you mean "mapreduce.job.reduces"?)`; err == nil || err.Error() != want {
		t.Errorf("load error = %v, want %s", err, want)
	}
}
