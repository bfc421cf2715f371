package kruisemanager

import (
	"encoding/json"
	"sort"
	"sync"
	"time"
)

// scaleExpectations are kruise's ScaleExpectations: the pods each CloneSet created or deleted and
// has not seen the event of yet, kept only in the leader's memory.
type scaleExpectations struct {
	mu sync.Mutex
	m  map[string]*scaleEntry
}

type scaleEntry struct {
	pods  map[string]map[string]bool // action -> pod names
	since time.Time
}

func newScaleExpectations() *scaleExpectations {
	return &scaleExpectations{m: map[string]*scaleEntry{}}
}

func (e *scaleExpectations) expect(key, action, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.m[key]
	if s == nil {
		s = &scaleEntry{pods: map[string]map[string]bool{}}
		e.m[key] = s
	}
	if len(s.pods) == 0 {
		s.since = time.Now()
	}
	if s.pods[action] == nil {
		s.pods[action] = map[string]bool{}
	}
	s.pods[action][name] = true
}

func (e *scaleExpectations) observe(key, action, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.m[key]
	if s == nil || s.pods[action] == nil {
		return
	}
	delete(s.pods[action], name)
	if len(s.pods[action]) == 0 {
		delete(s.pods, action)
	}
	if len(s.pods) == 0 {
		delete(e.m, key)
	}
}

func (e *scaleExpectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

// satisfied reports whether nothing is expected for the key; otherwise how long it has waited and
// the dirty pods as kruise logs them ({"create":["name"]}).
func (e *scaleExpectations) satisfied(key string) (bool, time.Duration, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.m[key]
	if s == nil {
		return true, 0, ""
	}
	dirty := map[string][]string{}
	for action, names := range s.pods {
		for n := range names {
			dirty[action] = append(dirty[action], n)
		}
		sort.Strings(dirty[action])
	}
	raw, _ := json.Marshal(dirty)
	return false, time.Since(s.since), string(raw)
}
