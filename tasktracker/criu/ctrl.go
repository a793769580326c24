package criu

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// CtrlFD is the descriptor on which a task child finds its control pipe (the
// read end): the tracker passes Ctrl.R as exec.Cmd.ExtraFiles[0]. A clone gets
// a fresh pipe on the same descriptor through CRIU's inherit-fd.
const CtrlFD = 3

// maxCtrlLine bounds a control line ("resume <attempt> <role>\n").
const maxCtrlLine = 512

// ErrCtrlClosed is returned by WaitResume when the control pipe has no writer
// left and no resume line came: the process was restored without inherit-fd (its
// copy of the pipe has no writer), or the tracker went away. Such a process has
// no identity of its own and must exit without writing anything.
var ErrCtrlClosed = errors.New("control pipe closed before a resume line")

// Ctrl is the tracker's side of a child's control pipe, through which a
// quiesced child learns "resume <attempt> <role>".
type Ctrl struct {
	// R is the read end: pass it as the child's ExtraFiles[0] (fd CtrlFD) and
	// close it in the tracker once the child has started. Nil for a restored
	// clone's Ctrl (CRIU handed the read end to the clone).
	R *os.File
	// W is the write end, kept by the tracker; Resume writes to it. Its pipe's
	// inode (PipeInode(W)) is the RestoreSpec.CtrlInode for a clone of this child.
	W *os.File
}

// NewCtrl makes a control pipe (both ends close-on-exec; exec.Cmd.ExtraFiles
// makes the child's copy inheritable).
func NewCtrl() (*Ctrl, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("criu: creating a control pipe: %w", err)
	}
	return &Ctrl{R: r, W: w}, nil
}

// Resume writes "resume <attemptID> <role>\n" to the pipe in one write (atomic:
// shorter than PIPE_BUF). Both words must be non-empty and free of white space.
func (c *Ctrl) Resume(attemptID, role string) error {
	if c == nil || c.W == nil {
		return fmt.Errorf("criu: resume %q %q: control pipe has no write end", attemptID, role)
	}
	line, err := resumeLine(attemptID, role)
	if err != nil {
		return err
	}
	if _, err := c.W.Write([]byte(line)); err != nil {
		return fmt.Errorf("criu: writing %q to control pipe %s: %w", strings.TrimSpace(line), c.W.Name(), err)
	}
	return nil
}

// Close closes whichever ends are still set and clears them.
func (c *Ctrl) Close() error {
	var errs []error
	for _, f := range []**os.File{&c.R, &c.W} {
		if *f != nil {
			if err := (*f).Close(); err != nil {
				errs = append(errs, fmt.Errorf("criu: closing control pipe %s: %w", (*f).Name(), err))
			}
			*f = nil
		}
	}
	return errors.Join(errs...)
}

func resumeLine(attemptID, role string) (string, error) {
	for _, w := range []struct{ what, v string }{{"attempt id", attemptID}, {"role", role}} {
		if w.v == "" || strings.ContainsFunc(w.v, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return "", fmt.Errorf("criu: bad %s %q for a resume line: must be non-empty, without spaces or control characters", w.what, w.v)
		}
	}
	line := "resume " + attemptID + " " + role + "\n"
	if len(line) > maxCtrlLine {
		return "", fmt.Errorf("criu: resume line for attempt %q is %d bytes, more than %d", attemptID, len(line), maxCtrlLine)
	}
	return line, nil
}

// parseResumeLine parses one control line without its newline.
func parseResumeLine(line string) (attemptID, role string, err error) {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "resume" {
		return "", "", fmt.Errorf("criu: bad control line %q: want \"resume <attempt> <role>\"", line)
	}
	return f[1], f[2], nil
}

// PipeInode returns the inode number of the pipe f is an end of: the CRIU
// inherit-fd key of that pipe is "pipe:[<inode>]".
func PipeInode(f *os.File) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, fmt.Errorf("criu: fstat %s: %w", f.Name(), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return 0, fmt.Errorf("criu: %s is not a pipe (mode %#o)", f.Name(), st.Mode)
	}
	return st.Ino, nil
}

// WaitResume is the child's side: it blocks until one resume line arrives on
// ctrl (normally os.NewFile(CtrlFD, "ctrl")) and returns its attempt id and role.
// It reads byte by byte, so nothing past the line is consumed. When the pipe
// has no writer and no line came it returns an error wrapping ErrCtrlClosed.
func WaitResume(ctrl *os.File) (attemptID, role string, err error) {
	var line []byte
	b := make([]byte, 1)
	for {
		n, err := ctrl.Read(b)
		if n == 1 {
			if b[0] == '\n' {
				return parseResumeLine(string(line))
			}
			if len(line) >= maxCtrlLine {
				return "", "", fmt.Errorf("criu: control line on %s longer than %d bytes", ctrl.Name(), maxCtrlLine)
			}
			line = append(line, b[0])
			continue
		}
		if errors.Is(err, io.EOF) {
			if len(line) > 0 {
				return "", "", fmt.Errorf("criu: %w: %s ended inside the line %q", ErrCtrlClosed, ctrl.Name(), line)
			}
			return "", "", fmt.Errorf("criu: %w: %s (restored without inherit-fd, or the tracker is gone)", ErrCtrlClosed, ctrl.Name())
		}
		if err != nil {
			return "", "", fmt.Errorf("criu: reading control pipe %s: %w", ctrl.Name(), err)
		}
	}
}
