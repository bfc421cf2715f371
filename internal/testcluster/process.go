package testcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// stopGrace is how long a component gets between SIGTERM and SIGKILL.
const stopGrace = 5 * time.Second

// logTailLines is how much of each component's log a failed test prints.
const logTailLines = 80

// spawner starts every child of a cluster from one goroutine locked to its OS thread. Pdeathsig
// fires when the forking *thread* exits (golang/go#27505), and the Go runtime may retire an unlocked
// thread at any time; this thread lives until close, after every child has been stopped.
type spawner struct {
	reqs chan spawnReq
	quit chan struct{}
}

type spawnReq struct {
	cmd  *exec.Cmd
	resp chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq), quit: make(chan struct{})}
	go func() {
		// Never unlocked: when this goroutine returns, its thread exits with it.
		runtime.LockOSThread()
		for {
			select {
			case r := <-s.reqs:
				r.resp <- r.cmd.Start()
			case <-s.quit:
				return
			}
		}
	}()
	return s
}

func (s *spawner) start(cmd *exec.Cmd) error {
	resp := make(chan error, 1)
	select {
	case s.reqs <- spawnReq{cmd: cmd, resp: resp}:
		return <-resp
	case <-s.quit:
		return errors.New("cluster is stopped")
	}
}

func (s *spawner) close() { close(s.quit) }

// process is one running component.
type process struct {
	name     string
	cmd      *exec.Cmd
	logPath  string
	exited   chan struct{} // closed once Wait returned
	waitErr  error         // valid after exited is closed
	stopping atomic.Bool   // set before we signal, so an exit before that is "unexpected"
}

// startProcess runs bin with args, output appended to <dir>/<name>.log.
func startProcess(s *spawner, dir, name, bin string, args []string, env []string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start %s: open log: %w", name, err)
	}
	// The child holds its own copy of the descriptor; ours is only needed until Start returns.
	defer logFile.Close()
	fmt.Fprintf(logFile, "=== %s %s %s\n", time.Now().Format(time.RFC3339Nano), bin, strings.Join(args, " "))

	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := s.start(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// exitError describes an exit that nobody asked for, with the log's tail for context.
func (p *process) exitError() error {
	return fmt.Errorf("%s exited: %v; last lines of %s:\n%s", p.name, p.waitErr, p.logPath, Tail(p.logPath, 20))
}

// stop sends SIGTERM to the process group, SIGKILL after stopGrace, and waits for the exit.
// It reports whether the process had already exited on its own.
func (p *process) stop() (exitedEarly bool) {
	if p.stopping.Swap(true) {
		<-p.exited
		return false
	}
	if p.hasExited() {
		return true
	}
	pgid := p.pid() // Setpgid makes the child the leader of a group with its own PID.
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.exited
	}
	// Anything the component forked dies with the group.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return false
}

// Tail returns the last n lines of a file, or a note why it could not be read.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// LeakedProcesses describes those of pids that are still alive (see ProcessAlive).
func LeakedProcesses(pids []int) []string {
	var alive []string
	for _, pid := range pids {
		if !ProcessAlive(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		alive = append(alive, fmt.Sprintf("%d: %s", pid, bytes.ReplaceAll(bytes.TrimRight(cmdline, "\x00"), []byte{0}, []byte(" "))))
	}
	return alive
}

// ProcessAlive reports whether pid runs. A zombie counts as gone: it holds no ports or files, and
// whether it is reaped depends on who became its parent.
func ProcessAlive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// stat is "pid (comm) state ...", and comm may itself contain ") ".
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || !bytes.HasPrefix(stat[i+1:], []byte(" Z"))
}

// AssertNoLeakedProcesses fails the test if any of pids is still alive, e.g. after Cluster.Stop.
func AssertNoLeakedProcesses(t testing.TB, pids []int) {
	t.Helper()
	for _, p := range LeakedProcesses(pids) {
		t.Errorf("process still running after cleanup: %s", p)
	}
}
