package kruisemanager

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// PodWatchOutage cuts the leader's pod watch the way a broken connection does, runs fn, then lets
// the watch recover: the informer re-lists, and whatever was created and deleted in between is
// never seen (openkruise/kruise#1765). It returns once the re-list happened.
func (m *Manager) PodWatchOutage(ctx context.Context, fn func(context.Context) error) error {
	m.mu.Lock()
	p := m.leader
	m.mu.Unlock()
	if p == nil {
		return errors.New("pod watch outage: no kruise-manager leader")
	}
	before := p.pods.LastSyncResourceVersion()
	p.podsLW.cut()
	err := fn(ctx)
	p.podsLW.restore()
	if err != nil {
		return err
	}
	// The reflector backs off up to a few seconds between failed lists.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		return p.podsLW.recovered() && p.pods.LastSyncResourceVersion() != before, nil
	})
	if err != nil {
		return fmt.Errorf("wait for the kruise-manager pod watch to re-list: %w", err)
	}
	return nil
}

// outageListWatch lists and watches pods, and can fail like a dropped connection: cut stops every
// open watch and fails new lists and watches until restore.
type outageListWatch struct {
	lw cache.ListerWatcher

	mu      sync.Mutex
	down    bool
	watches []watch.Interface
	// ok counts lists and watches that succeeded since the last restore.
	ok int
}

var errOutage = errors.New("connection refused (pod watch outage)")

func (o *outageListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	if o.isDown() {
		return nil, errOutage
	}
	obj, err := o.lw.List(opts)
	if err == nil {
		o.mu.Lock()
		o.ok++
		o.mu.Unlock()
	}
	return obj, err
}

func (o *outageListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	if o.isDown() {
		return nil, errOutage
	}
	w, err := o.lw.Watch(opts)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.watches = append(o.watches, w)
	o.ok++
	return w, nil
}

func (o *outageListWatch) isDown() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.down
}

func (o *outageListWatch) cut() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down = true
	for _, w := range o.watches {
		w.Stop()
	}
	o.watches = nil
}

func (o *outageListWatch) restore() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down, o.ok = false, 0
}

func (o *outageListWatch) recovered() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return !o.down && o.ok > 0
}
