package bundle

import (
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle/source"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
)

// Replayer is a transport that answers from a recording: each request Key gets its recorded
// answers in the order they came, then the last one again (a scan that reads once more than the
// capture did sees what the capture last saw). A request never recorded fails with
// *source.NotCapturedError, which is not transient: the scan records the input unread.
type Replayer struct {
	index  Index
	bodies func(file string) (io.ReadCloser, error)

	mu   sync.Mutex
	next map[string]int
}

// NewReplayer answers from index, opening bodies by file name: each is streamed to the client as
// it reads, so a recorded list of every pod is never held whole.
func NewReplayer(index Index, bodies func(file string) (io.ReadCloser, error)) *Replayer {
	return &Replayer{index: index, bodies: bodies, next: map[string]int{}}
}

// RoundTrip answers req from the recording. Requests are keyed without a path prefix: a
// replaying client's host has none.
func (r *Replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	key := Key(req, "")
	r.mu.Lock()
	answers := r.index[key]
	i := r.next[key]
	if i < len(answers)-1 {
		r.next[key] = i + 1
	}
	r.mu.Unlock()
	if len(answers) == 0 {
		return nil, &source.NotCapturedError{Method: req.Method, Path: req.URL.RequestURI(), Format: source.FormatBundle}
	}
	a := answers[i]
	body, err := r.bodies(a.File)
	if err != nil {
		return nil, fmt.Errorf("read recorded answer %s: %w", a.File, err)
	}
	h := http.Header{}
	if a.ContentType != "" {
		h.Set("Content-Type", a.ContentType)
	}
	if a.Date != "" {
		h.Set("Date", a.Date)
	}
	collect.SetRecordedElapsed(req.Context(), a.Elapsed)
	return &http.Response{
		Status: fmt.Sprintf("%d %s", a.Status, http.StatusText(a.Status)), StatusCode: a.Status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: body, ContentLength: -1, Request: req,
	}, nil
}
