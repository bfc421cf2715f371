package kruisemanager

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// managerLog is the leader container's log as the container runtime writes it (CRI format; klog
// writes to stderr), which kwok serves through the kubelet API.
type managerLog struct {
	mu   sync.Mutex
	path string
	// verbosity is the container's --v: the klog.V lines it writes.
	verbosity int
}

// reset starts a new container's log.
func (l *managerLog) reset() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := os.WriteFile(l.path, nil, 0o600); err != nil {
		return fmt.Errorf("kruise-manager log: %w", err)
	}
	return nil
}

// info appends a klog line: "I<mmdd hh:mm:ss.uuuuuu> <pid> <file>] <message>".
func (l *managerLog) info(file, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now().UTC()
	line := fmt.Sprintf("I%02d%02d %02d:%02d:%02d.%06d       1 %s] %s", now.Month(), now.Day(), now.Hour(), now.Minute(), now.Second(),
		now.Nanosecond()/1000, file, fmt.Sprintf(format, args...))
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s stderr F %s\n", now.Format(time.RFC3339Nano), line)
}

// infoV appends the line when the process runs at the level or above (klog.V(level).InfoS).
func (l *managerLog) infoV(level int, file, format string, args ...any) {
	if l.verbosity >= level {
		l.info(file, format, args...)
	}
}
