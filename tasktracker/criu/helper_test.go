package criu

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestShQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/opt/gomr/criu/criu.sh": `'/opt/gomr/criu/criu.sh'`,
		"it's":                   `'it'\''s'`,
		"":                       `''`,
		"$HOME `x` \"y\"":        `'$HOME ` + "`x`" + ` "y"'`,
	} {
		if got := shQuote(in); got != want {
			t.Errorf("shQuote(%q) = %s, want %s", in, got, want)
		}
		if out, err := exec.Command("sh", "-c", "printf %s "+shQuote(in)).Output(); err != nil || string(out) != in {
			t.Errorf("sh reads %s as %q (%v), want %q", shQuote(in), out, err, in)
		}
	}
}

// TestHelperScripts: the helpers are valid shell, quote every path, and pass
// their arguments on to CRIU (the clone tests run them for real).
func TestHelperScripts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "it's work")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1): ", err)
	}
	binds := []Bind{{Source: "/src/a b", Target: "/dst/it's"}, {Source: "/s2", Target: "/d2"}}
	script, errFile, err := writeBindHelper(dir, "/opt/gomr/criu/criu.sh", binds)
	if err != nil {
		t.Fatal(err)
	}
	if script != filepath.Join(dir, RestoreHelper) || errFile != filepath.Join(dir, RestoreHelperErr) {
		t.Errorf("helper at %s, errors to %s", script, errFile)
	}
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, want := range []string{
		"exec 2>>" + shQuote(errFile) + "\n",
		"--mount --propagation private -- \"$0\" \"$@\"\n",
		" --rbind -- '/src/a b' '/dst/it'\\''s' || { echo 'bind-mounting /src/a b over /dst/it'\\''s failed' >&2; exit 1; }\n",
		" --rbind -- '/s2' '/d2' || ",
		"exec '/opt/gomr/criu/criu.sh' \"$@\"\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("bind helper lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "'/src/a b'") > strings.Index(text, "'/s2'") {
		t.Errorf("binds out of order:\n%s", text)
	}
	if out, err := exec.Command("sh", "-n", script).CombinedOutput(); err != nil {
		t.Errorf("sh -n %s: %v\n%s", script, err, out)
	}
	if st, err := os.Stat(script); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("helper mode: %v, %v", st.Mode(), err)
	}

	script, _, err = writeNSEnterHelper(dir, "/opt/gomr/criu/criu.sh", 4242)
	if err != nil {
		t.Skip("no nsenter(1): ", err)
	}
	b, _ = os.ReadFile(script)
	if !strings.Contains(string(b), " --mount=/proc/4242/ns/mnt -- '/opt/gomr/criu/criu.sh' \"$@\"\n") {
		t.Errorf("nsenter helper:\n%s", b)
	}
	if out, err := exec.Command("sh", "-n", script).CombinedOutput(); err != nil {
		t.Errorf("sh -n %s: %v\n%s", script, err, out)
	}
}
