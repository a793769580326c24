package child

import (
	"fmt"
	"io"
	"log/slog"
	"os"
)

// LifelineFDEnv names the environment variable through which a TaskTracker
// that does not clone gives a child the read end of its lifeline: a pipe
// whose write end the tracker alone holds, until the child exits. (A
// tracker that clones gives it a control pipe instead, which serves as the
// lifeline too.)
const LifelineFDEnv = "GOMR_LIFELINE_FD"

// exitTrackerGone is the exit code of a child whose tracker is gone.
const exitTrackerGone = 5

// startLifeline watches the lifeline named by LifelineFDEnv, if any: once
// it reads EOF the tracker is gone (killed, or exited without killing its
// children) and the child exits at once, writing nothing more. The
// parent-death signal alone misses a child forked in the instant the
// tracker is killed.
func startLifeline(log *slog.Logger) {
	v := os.Getenv(LifelineFDEnv)
	if v == "" {
		return
	}
	var fd int
	if _, err := fmt.Sscanf(v, "%d", &fd); err != nil || fd < 3 {
		log.Warn("ignoring a bad lifeline descriptor", "env", LifelineFDEnv, "value", v)
		return
	}
	f := os.NewFile(uintptr(fd), "lifeline")
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		log.Warn("ignoring a lifeline descriptor that is not a pipe", "env", LifelineFDEnv, "value", v, "error", err)
		return
	}
	go watchLifeline(f, func() { trackerGone(log, "lifeline") })
}

// watchLifeline reads r until it ends, then calls gone.
func watchLifeline(r io.Reader, gone func()) {
	_, _ = io.Copy(io.Discard, r)
	gone()
}

// trackerGone ends the child: its tracker is gone, so nothing it does can
// be reported or committed.
func trackerGone(log *slog.Logger, pipe string) {
	log.Error("the tracker is gone (its end of the " + pipe + " pipe closed): exiting")
	os.Exit(exitTrackerGone)
}
