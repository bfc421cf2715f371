package testcluster

import (
	"os"
	"sync"
)

// start launches one component and records it for teardown.
func (c *Cluster) start(name, bin string, args ...string) (*process, error) {
	p, err := startProcess(c.spawner, c.Dir, name, bin, args, c.env)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p, nil
}

// Stop tears the cluster down: components first, then the apiserver, then etcd, each with SIGTERM
// and SIGKILL after a grace period. It is idempotent and registered with t.Cleanup by Start; a
// component that died by itself fails the test, and a failed test gets the tail of every log.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		procs := append([]*process(nil), c.procs...)
		c.mu.Unlock()

		early := stopProcesses(procs)
		c.spawner.close()

		for _, p := range early {
			if c.t != nil {
				c.t.Errorf("test cluster: %s (pid %d) exited before teardown: %v", p.name, p.pid(), p.waitErr)
			} else {
				c.logf("test cluster: %s (pid %d) exited before teardown: %v; logs kept in %s", p.name, p.pid(), p.waitErr, c.Dir)
			}
		}
		if c.removeDir && len(early) == 0 {
			if err := os.RemoveAll(c.Dir); err != nil {
				c.logf("test cluster: remove %s: %v", c.Dir, err)
			}
		}
		if c.t != nil && c.t.Failed() {
			seen := map[string]bool{}
			for _, p := range procs {
				if !seen[p.logPath] {
					seen[p.logPath] = true
					c.t.Logf("--- last %d lines of %s ---\n%s", logTailLines, p.logPath, Tail(p.logPath, logTailLines))
				}
			}
		}
	})
}

// stopProcesses stops controllers first so they do not log errors about a vanished apiserver,
// then apiservers, then etcd; each tier in parallel. It returns the processes that had exited
// before they were asked to.
func stopProcesses(procs []*process) (early []*process) {
	tier := func(p *process) int {
		switch p.name {
		case "kube-apiserver":
			return 1
		case "etcd":
			return 2
		default:
			return 0
		}
	}
	var mu sync.Mutex
	for t := range 3 {
		var wg sync.WaitGroup
		for _, p := range procs {
			if tier(p) != t {
				continue
			}
			wg.Go(func() {
				if p.stop() {
					mu.Lock()
					early = append(early, p)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	return early
}

// Processes returns the PIDs of every process the cluster started, including stopped ones.
func (c *Cluster) Processes() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := make([]int, 0, len(c.procs))
	for _, p := range c.procs {
		pids = append(pids, p.pid())
	}
	return pids
}
