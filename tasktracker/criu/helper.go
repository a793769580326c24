package criu

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Helper scripts written into the work directory when CRIU must run in another
// mount namespace than the caller's, and the files their error output goes to.
// go-criu runs CRIU as "<path> swrk <fd>" with no way to set up the child, so
// the namespace is entered by a script run in CRIU's place: the calling
// process's own threads never change namespace.
const (
	RestoreHelper    = "restore-criu.sh" // unshare, bind mounts, exec CRIU
	RestoreHelperErr = "restore-criu.err"
	DumpHelper       = "dump-criu.sh" // nsenter the task's mount namespace, exec CRIU
	DumpHelperErr    = "dump-criu.err"
)

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// oneLineText puts text on one line.
func oneLineText(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// writeHelper writes an executable script and returns its absolute path and
// the absolute path of the (emptied) file its stderr goes to.
func writeHelper(dir, name, errName string, body func(errFile string) string) (script, errFile string, err error) {
	if dir, err = filepath.Abs(dir); err != nil {
		return "", "", fmt.Errorf("helper %s: %w", name, err)
	}
	script, errFile = filepath.Join(dir, name), filepath.Join(dir, errName)
	if err := os.Remove(errFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", "", fmt.Errorf("removing old %s: %w", errFile, err)
	}
	tmp := script + ".tmp"
	if err := os.WriteFile(tmp, []byte(body(errFile)), 0o700); err != nil {
		return "", "", fmt.Errorf("writing helper %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, script); err != nil {
		return "", "", fmt.Errorf("installing helper %s: %w", script, err)
	}
	return script, errFile, nil
}

// writeBindHelper writes RestoreHelper into dir: it re-executes itself under
// unshare(1) in a new mount namespace with / private, bind-mounts each Bind
// with mount(8) and execs CRIU with the arguments it was given.
func writeBindHelper(dir, criuPath string, binds []Bind) (script, errFile string, err error) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return "", "", fmt.Errorf("restore with bind mounts needs unshare(1) from util-linux: %w", err)
	}
	mount, err := exec.LookPath("mount")
	if err != nil {
		return "", "", fmt.Errorf("restore with bind mounts needs mount(8): %w", err)
	}
	if criuPath, err = filepath.Abs(criuPath); err != nil {
		return "", "", fmt.Errorf("CRIU path: %w", err)
	}
	return writeHelper(dir, RestoreHelper, RestoreHelperErr, func(errFile string) string {
		var b strings.Builder
		b.WriteString("#!/bin/sh\n# Written by gomr's tasktracker/criu.Restore: CRIU in a new mount namespace\n# (/ private) with the clone's bind mounts.\n")
		fmt.Fprintf(&b, "exec 2>>%s\n", shQuote(errFile))
		b.WriteString("if [ \"${GOMR_CRIU_MNTNS:-}\" != 1 ]; then\n")
		fmt.Fprintf(&b, "\tGOMR_CRIU_MNTNS=1 exec %s --mount --propagation private -- \"$0\" \"$@\"\n", shQuote(unshare))
		b.WriteString("fi\nunset GOMR_CRIU_MNTNS\n")
		for _, bd := range binds {
			fmt.Fprintf(&b, "%s --rbind -- %s %s || { echo %s >&2; exit 1; }\n", shQuote(mount), shQuote(bd.Source), shQuote(bd.Target),
				shQuote(fmt.Sprintf("bind-mounting %s over %s failed", bd.Source, bd.Target)))
		}
		fmt.Fprintf(&b, "exec %s \"$@\"\n", shQuote(criuPath))
		return b.String()
	})
}

// writeNSEnterHelper writes DumpHelper into dir: it execs CRIU inside the mount
// namespace of pid with nsenter(1).
func writeNSEnterHelper(dir, criuPath string, pid int) (script, errFile string, err error) {
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return "", "", fmt.Errorf("dumping a process in another mount namespace needs nsenter(1) from util-linux: %w", err)
	}
	if criuPath, err = filepath.Abs(criuPath); err != nil {
		return "", "", fmt.Errorf("CRIU path: %w", err)
	}
	return writeHelper(dir, DumpHelper, DumpHelperErr, func(errFile string) string {
		return "#!/bin/sh\n# Written by gomr's tasktracker/criu.Dump: CRIU in the dumped process's mount namespace.\n" +
			fmt.Sprintf("exec 2>>%s\n", shQuote(errFile)) +
			fmt.Sprintf("exec %s --mount=/proc/%s/ns/mnt -- %s \"$@\"\n", shQuote(nsenter), strconv.Itoa(pid), shQuote(criuPath))
	})
}

// helperCause returns the helper's error output, if any, for an error message.
func helperCause(errFile string) string {
	if errFile == "" {
		return ""
	}
	b, err := os.ReadFile(errFile)
	if err != nil || len(b) == 0 {
		return ""
	}
	return "helper: " + oneLineText(string(b)) + "; "
}

// retryTextBusy runs f again (up to 3 tries in all) while it fails with
// ETXTBSY: a helper script just written can be "busy" for a moment when
// another goroutine forks while the script's write descriptor is open (the
// child holds it until its exec closes it).
func retryTextBusy(f func() error) error {
	var err error
	for i := 0; i < 3; i++ {
		if err = f(); !errors.Is(err, unix.ETXTBSY) {
			return err
		}
		time.Sleep(time.Duration(i+1) * 5 * time.Millisecond)
	}
	return err
}
