package main

// Link cuts for the fault-injection suite: TaskTrackers in network
// namespaces, each joined by a veth pair to a bridge on the host that
// carries the JobTracker's address; cutting a namespace's link is setting
// its host-side veth down. Root and iproute2 only: otherwise the test is
// skipped with a message. The addresses are a private /24 on that bridge,
// which exists only on this machine for the test's duration; nothing is
// sent anywhere else.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gomr/conf"
	"gomr/jobtracker"
)

// netnsLab is the bridge and the namespaces of one test.
type netnsLab struct {
	t      *testing.T
	bridge string
	hostIP string
	ports  []netnsPort
}

// netnsPort is a namespace with its veth pair and address.
type netnsPort struct {
	ns, hostVeth, peerVeth, ip string
}

// ipCmd runs ip with args and returns its combined output.
func ipCmd(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// newNetnsLab makes a bridge and n namespaces joined to it, removed when
// the test ends; it skips the test when that cannot be done here.
func newNetnsLab(t *testing.T, n int) *netnsLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("link cuts need root (network namespaces and veth pairs): skipped")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("link cuts need iproute2's ip (make chaos installs it as root; apt-get install iproute2): skipped")
	}
	sweepStaleNetns()
	pid := os.Getpid()
	lab := &netnsLab{t: t, bridge: fmt.Sprintf("gcb%d", pid)}
	// A /24 that no interface here has an address in and that no route
	// but the default one covers: the bridge shadows nothing.
	prefix := ""
	for k := range 250 {
		p := fmt.Sprintf("10.213.%d.", (pid+k)%250+1)
		addrs, err1 := ipCmd("-o", "addr", "show", "to", p+"0/24")
		inside, err2 := ipCmd("route", "show", "root", p+"0/24")
		covering, err3 := ipCmd("route", "show", "match", p+"0/24")
		free := err1 == nil && err2 == nil && err3 == nil && strings.TrimSpace(addrs) == "" && strings.TrimSpace(inside) == ""
		for _, l := range strings.Split(strings.TrimSpace(covering), "\n") {
			free = free && (l == "" || strings.HasPrefix(l, "default "))
		}
		if free {
			prefix = p
			break
		}
	}
	if prefix == "" {
		t.Skip("link cuts: no free 10.213.x.0/24 for the test bridge: skipped")
	}
	lab.hostIP = prefix + "1"
	t.Cleanup(lab.teardown)
	must := func(args ...string) {
		if _, err := ipCmd(args...); err != nil {
			t.Skipf("link cuts: setting up the network namespaces failed, skipped: %v", err)
		}
	}
	must("link", "add", lab.bridge, "type", "bridge")
	must("addr", "add", lab.hostIP+"/24", "dev", lab.bridge)
	must("link", "set", lab.bridge, "up")
	for i := range n {
		p := netnsPort{
			ns:       fmt.Sprintf("gomrchaos-%d-%d", pid, i),
			hostVeth: fmt.Sprintf("gch%dx%d", pid, i),
			peerVeth: fmt.Sprintf("gcp%dx%d", pid, i),
			ip:       fmt.Sprintf("%s%d", prefix, i+2),
		}
		lab.ports = append(lab.ports, p)
		must("netns", "add", p.ns)
		must("link", "add", p.hostVeth, "type", "veth", "peer", "name", p.peerVeth)
		must("link", "set", p.peerVeth, "netns", p.ns)
		must("link", "set", p.hostVeth, "master", lab.bridge)
		must("link", "set", p.hostVeth, "up")
		must("netns", "exec", p.ns, "ip", "addr", "add", p.ip+"/24", "dev", p.peerVeth)
		must("netns", "exec", p.ns, "ip", "link", "set", p.peerVeth, "up")
		must("netns", "exec", p.ns, "ip", "link", "set", "lo", "up")
	}
	return lab
}

// teardown removes the namespaces, the veths and the bridge.
func (lab *netnsLab) teardown() {
	for _, p := range lab.ports {
		_, _ = ipCmd("netns", "del", p.ns)
		_, _ = ipCmd("link", "del", p.hostVeth)
	}
	_, _ = ipCmd("link", "del", lab.bridge)
}

// sweepStaleNetns removes the namespaces and links a killed test binary
// left (their names carry its pid).
func sweepStaleNetns() {
	dead := func(pidText string) bool {
		pid, err := strconv.Atoi(pidText)
		return err == nil && pid != os.Getpid() && syscall.Kill(pid, 0) == syscall.ESRCH
	}
	if out, err := ipCmd("netns", "list"); err == nil {
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			if len(f) == 0 {
				continue
			}
			if parts := strings.Split(f[0], "-"); len(parts) == 3 && parts[0] == "gomrchaos" && dead(parts[1]) {
				_, _ = ipCmd("netns", "del", f[0])
			}
		}
	}
	if out, err := ipCmd("-o", "link", "show"); err == nil {
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			for _, pre := range []string{"gcb", "gch"} {
				if rest, ok := strings.CutPrefix(name, pre); ok {
					pidText, _, _ := strings.Cut(rest, "x")
					if dead(pidText) {
						_, _ = ipCmd("link", "del", name)
					}
				}
			}
		}
	}
}

// cut sets namespace i's link down for d, then up again.
func (lab *netnsLab) cut(i int, d time.Duration) error {
	if _, err := ipCmd("link", "set", lab.ports[i].hostVeth, "down"); err != nil {
		return err
	}
	time.Sleep(d)
	_, err := ipCmd("link", "set", lab.ports[i].hostVeth, "up")
	return err
}

// startLabCluster starts the JobTracker on the bridge's address, host
// trackers that serve their shuffle there too, and one tracker in each
// namespace of the lab (nsTrackers[i] in namespace i).
func startLabCluster(t *testing.T, lab *netnsLab, hostTrackers, nsTrackers []trackerSpec, defines ...string) *cluster {
	t.Helper()
	dir := t.TempDir()
	c := &cluster{t: t, dir: dir, procs: map[string]*exec.Cmd{}}
	c.jtAddr = fmt.Sprintf("%s:%d", lab.hostIP, freePort(t))
	c.defines = append([]string{
		"mapreduce.jobtracker.address=" + c.jtAddr,
		"mapreduce.jobtracker.http.address=127.0.0.1:0",
		"mapreduce.jobtracker.jobhistory.location=" + filepath.Join(dir, "history"),
		"mapreduce.cluster.local.dir=" + filepath.Join(dir, "local"),
		"mapreduce.tasktracker.heartbeat.interval=" + strconv.FormatInt(chaosHeartbeat.Milliseconds(), 10),
		"mapreduce.tasktracker.host.name=" + lab.hostIP,
		"mapreduce.tasktracker.http.address=" + lab.hostIP + ":0",
		"log.level=info",
		"mapreduce.map.speculative=false",
		"mapreduce.reduce.speculative=false",
	}, defines...)
	t.Cleanup(c.stop)
	c.start("jobtracker", "jobtracker")
	waitPort(t, c.jtAddr)
	for _, tr := range hostTrackers {
		c.startTracker(tr)
	}
	for i, tr := range nsTrackers {
		lab.startTracker(c, i, tr)
	}
	cfg, err := conf.Load(conf.LoadOptions{Overrides: c.overrides()})
	if err != nil {
		t.Fatal(err)
	}
	if c.client, err = jobtracker.Dial(c.jtAddr, cfg); err != nil {
		t.Fatal(err)
	}
	return c
}

// startTracker starts a tracker in namespace i (ip netns exec execs the
// binary: the process is the tracker), serving its shuffle on the
// namespace's address. It gets no debug endpoint: one on the namespace's
// loopback could not be reached.
func (lab *netnsLab) startTracker(c *cluster, i int, tr trackerSpec) {
	p := lab.ports[i]
	args := []string{"netns", "exec", p.ns, os.Args[0], "tasktracker", "--name", tr.name,
		"-D", fmt.Sprintf("mapreduce.tasktracker.map.tasks.maximum=%d", tr.maps),
		"-D", fmt.Sprintf("mapreduce.tasktracker.reduce.tasks.maximum=%d", tr.reduces)}
	args = append(args, definesArgs(c.defines)...)
	args = append(args, "-D", "mapreduce.tasktracker.host.name="+p.ip, "-D", "mapreduce.tasktracker.http.address="+p.ip+":0")
	cmd := exec.Command("ip", args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, chaosDebugEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GOMR_AS_MR=1")
	logf, err := os.Create(filepath.Join(c.dir, tr.name+".log"))
	if err != nil {
		c.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	logf.Close()
	c.procs[tr.name] = cmd
}

// liveTrackers lists the trackers the JobTracker knows.
func liveTrackers(c *cluster) map[string]bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	trs, err := c.client.Trackers(ctx)
	live := map[string]bool{}
	if err == nil {
		for _, tr := range trs {
			live[tr.Name] = true
		}
	}
	return live
}

// linkCutExpiry is the tracker expiry of the link-cut cluster: cuts of 1
// to 3 s are ridden out, longer ones lose the tracker.
const linkCutExpiry = 3 * time.Second

// TestChaosLinkCut: trackers n1 and n2 run in network namespaces, h1 on
// the host. Each job of a run gets two link cuts of 1-12 s: one
// namespace's link during the maps, the other's during the reduces (they
// overlap when the first is still cut). A tracker cut for longer than the
// expiry must be declared lost within the detection target and come back
// when its link does; the output must be exact. A run is four jobs (one
// in the short form). The time to recover is from the moment the last cut
// began to the job's end; after_restore_max is the longest from a link
// coming back up to the job's end (0 when the job ended during the cut).
func TestChaosLinkCut(t *testing.T) {
	ch := newChaos(t, "link-cut")
	ch.expiry = linkCutExpiry
	lab := newNetnsLab(t, 2)
	in, want := chaosInput(t, 3<<20, 1<<20, 91)
	nsNames := []string{"n1", "n2"}
	c := startLabCluster(t, lab, []trackerSpec{{"h1", 2, 1}}, []trackerSpec{{"n1", 2, 1}, {"n2", 2, 1}},
		fmt.Sprintf("mapreduce.jobtracker.expire.trackers.interval=%d", linkCutExpiry.Milliseconds()),
		"mapreduce.reduce.shuffle.retry.delay.ms=20")
	if !c.waitJoined(30*time.Second, "h1", "n1", "n2") {
		t.Fatal("the trackers did not join (is the bridge forwarding?)")
	}
	jobsPerRun := 4
	if ch.short {
		jobsPerRun = 1
	}
	lostSeen := 0
	var afterRestore []time.Duration
	for ch.next() {
		o := outcomeCorrect
		for range jobsPerRun {
			spec, out := chaosSpec(t, in, 3,
				"mapreduce.input.fileinputformat.split.maxsize", "400000", "mapreduce.task.io.sort.mb", "1",
				"mapreduce.job.reduce.slowstart.completedmaps", ch.slowstart())
			id, ok := ch.submit(c, spec)
			if !ok {
				o = worst(o, outcomeWrong)
				continue
			}
			type cutRec struct {
				ns         int
				d          time.Duration
				start, end time.Time
			}
			var mu sync.Mutex
			var cuts []cutRec
			var wg sync.WaitGroup
			cut := func(i int, phase string) {
				d := ch.between(time.Second, 12*time.Second)
				start := ch.fault("cut %s's link for %v %s", nsNames[i], d.Round(time.Millisecond), phase)
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := lab.cut(i, d); err != nil {
						t.Errorf("cutting %s's link: %v", nsNames[i], err)
					}
					mu.Lock()
					cuts = append(cuts, cutRec{i, d, start, time.Now()})
					mu.Unlock()
				}()
			}
			first := ch.rng.IntN(2)
			if ch.inMaps(c, id) {
				cut(first, "during the maps")
			}
			if ch.inReduces(c, id) {
				cut(1-first, "during the reduces")
			}
			e := ch.waitJob(c, id)
			wg.Wait()
			jo := ch.outcome(c, e, out, want)
			o = worst(o, jo)
			var restored, lastCut time.Time
			for _, k := range cuts {
				restored, lastCut = maxTime(restored, k.end), maxTime(lastCut, k.start)
				if k.d <= linkCutExpiry+2*chaosHeartbeat+time.Second {
					continue
				}
				// Cut for longer than the expiry: lost, within the target.
				ts := c.logTimes("jobtracker", `msg="lost tracker" component=jobtracker tracker=`+nsNames[k.ns]+" ")
				if at, ok := firstAfter(ts, k.start); ok && at.Before(k.end) {
					lostSeen++
					ch.trackerLossDetected(fmt.Sprintf("the loss of %s (cut for %v)", nsNames[k.ns], k.d.Round(time.Millisecond)), at.Sub(k.start))
				} else {
					t.Errorf("run %d: %s was cut for %v (expiry %v) and not declared lost during the cut", ch.run, nsNames[k.ns], k.d, linkCutExpiry)
				}
			}
			if jo == outcomeCorrect && !restored.IsZero() {
				ch.recover = append(ch.recover, max(0, e.at.Sub(lastCut)))
				afterRestore = append(afterRestore, max(0, e.at.Sub(restored)))
				ch.logf("job %s correct; ended %v after the last cut began, %v after the last link came back", id,
					e.at.Sub(lastCut).Round(time.Millisecond), e.at.Sub(restored).Round(time.Millisecond))
			}
			// Every tracker is back before the next job.
			if !until(time.Minute, func() bool {
				live := liveTrackers(c)
				return live["h1"] && live["n1"] && live["n2"]
			}) {
				t.Errorf("run %d: the cut trackers did not come back within a minute of their links: %v", ch.run, liveTrackers(c))
				o = worst(o, outcomeHang)
			}
		}
		ch.tally(o)
		ch.checkBounded(c)
	}
	_, arMax := quantiles(afterRestore)
	ch.extra = append(ch.extra, fmt.Sprintf("trackers_lost=%d after_restore_max=%.2fs", lostSeen, arMax.Seconds()))
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
