package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"
)

// cpuTimeline samples, every period, the CPU the machine spent and how it was shared:
// the node's own processes (kubelet, containerd), each pod of the node by name, and
// everything else on the machine (the tests, the control plane, a CPU hog). A rollout
// that times queries out is read against it: which pod was starved, and by whom.
type cpuTimeline struct {
	mu      sync.Mutex
	lines   []string
	done    chan struct{}
	stopped chan struct{}
}

const cpuacctRoot = "/sys/fs/cgroup/cpuacct"

func cpuUsage(dir string) float64 {
	b, err := os.ReadFile(filepath.Join(dir, "cpuacct.usage"))
	if err != nil {
		return 0
	}
	ns, _ := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	return ns
}

// outsideProcesses is the CPU time (in seconds) of every process outside the node
// cgroup, by PID, with its command name: the part of "outside the node" each one took.
func outsideProcesses(nodeCgroup string) map[int]procCPU {
	out := map[int]procCPU{}
	procs, _ := procfs.AllProcs()
	for _, p := range procs {
		cgroups, err := p.Cgroups()
		if err != nil || slices.ContainsFunc(cgroups, func(c procfs.Cgroup) bool { return strings.Contains(c.Path, nodeCgroup) }) {
			continue
		}
		stat, err := p.Stat()
		if err != nil {
			continue
		}
		out[p.PID] = procCPU{name: stat.Comm, seconds: stat.CPUTime()}
	}
	return out
}

type procCPU struct {
	name    string
	seconds float64
}

// busiestOutside names the processes outside the node that took at least 0.05 cores
// between two samples, by command name, busiest first.
func busiestOutside(prev, now map[int]procCPU, secs float64) string {
	byName := map[string]float64{}
	for pid, p := range now {
		byName[p.name] += (p.seconds - prev[pid].seconds) / secs
	}
	names := make([]string, 0, len(byName))
	for n, cores := range byName {
		if cores >= 0.05 {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool { return byName[names[i]] > byName[names[j]] })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.2f", n, byName[n])
	}
	return strings.Join(parts, ", ")
}

// podCgroups are the node's pod cgroups (pod<uid> folders) by pod UID.
func podCgroups(pods string) map[string]string {
	out := map[string]string{}
	_ = filepath.WalkDir(pods, func(p string, d os.DirEntry, err error) error {
		// pod<uid>, the UID's dashes kept (cgroupfs driver).
		if err == nil && d.IsDir() && p != pods && strings.HasPrefix(d.Name(), "pod") && len(d.Name()) == len("pod")+36 {
			out[strings.TrimPrefix(d.Name(), "pod")] = p
			return filepath.SkipDir
		}
		return nil
	})
	return out
}

// watchCPU starts the sampling; names maps a pod UID to the name shown (others are summed
// as "other pods").
func watchCPU(period time.Duration, names func() map[string]string) *cpuTimeline {
	c := &cpuTimeline{done: make(chan struct{}), stopped: make(chan struct{})}
	node := filepath.Join(cpuacctRoot, cluster.Cgroup())
	if _, err := os.Stat(node); err != nil {
		close(c.stopped)
		return c
	}
	go func() {
		defer close(c.stopped)
		// Usage by cgroup: the machine, the node, its processes, and each pod by UID (a
		// recreated pod has a new cgroup whose count starts again).
		sample := func() map[string]float64 {
			now := map[string]float64{"machine": cpuUsage(cpuacctRoot), "node": cpuUsage(node), "node processes": cpuUsage(filepath.Join(node, "node"))}
			for uid, dir := range podCgroups(filepath.Join(node, "pods")) {
				now[uid] = cpuUsage(dir)
			}
			return now
		}
		prev, last := sample(), time.Now()
		prevOutside := outsideProcesses(cluster.Cgroup())
		for {
			select {
			case <-c.done:
				return
			case <-time.After(period):
			}
			now, at := sample(), time.Now()
			outside := outsideProcesses(cluster.Cgroup())
			busiest := busiestOutside(prevOutside, outside, at.Sub(last).Seconds())
			secs := at.Sub(last).Seconds() * 1e9
			cores := func(k string) float64 { return (now[k] - prev[k]) / secs }
			byName := map[string]float64{}
			named := names()
			for k := range now {
				if k == "machine" || k == "node" || k == "node processes" {
					continue
				}
				name, ok := named[k]
				if !ok {
					name = "other pods"
				}
				byName[name] += cores(k)
			}
			keys := make([]string, 0, len(byName))
			for k := range byName {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			parts := make([]string, len(keys))
			for i, k := range keys {
				parts[i] = fmt.Sprintf("%s %.2f", k, byName[k])
			}
			line := fmt.Sprintf("%s cores used: machine %.2f, outside the node %.2f (busiest: %s), node processes %.2f, %s",
				at.Format(time.TimeOnly), cores("machine"), cores("machine")-cores("node"), busiest, cores("node processes"), strings.Join(parts, ", "))
			c.mu.Lock()
			c.lines = append(c.lines, line)
			c.mu.Unlock()
			prev, last, prevOutside = now, at, outside
		}
	}()
	return c
}

func (c *cpuTimeline) stop() []string {
	select {
	case <-c.done:
	default:
		close(c.done)
	}
	<-c.stopped
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lines
}
