package bundle

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
)

// Response is one recorded answer.
type Response struct {
	// File holds the body, below responses/.
	File        string `json:"file"`
	Status      int    `json:"status"`
	ContentType string `json:"contentType,omitempty"`
	// Date is the apiserver's Date header: a replayed scan measures ages on it, as a live one.
	Date string `json:"date,omitempty"`
	// Elapsed is how long after the recording started the answer came (collect.ServerDate.Elapsed).
	Elapsed time.Duration `json:"elapsed"`
}

// Index maps each request Key to its answers in the order they came.
type Index map[string][]Response

// Recorder records every answer the transports it wraps read. One Recorder serves all the
// clients of a scan (rest.Config.Wrap is applied to each).
type Recorder struct {
	prefix string
	start  time.Time

	mu     sync.Mutex
	index  Index
	bodies map[string][]byte
	count  int
	bytes  int64
}

// NewRecorder records the answers of the server at host (its address, as in rest.Config.Host).
func NewRecorder(host string) *Recorder {
	return &Recorder{prefix: pathPrefix(host), start: time.Now(), index: Index{}, bodies: map[string][]byte{}}
}

// Wrap puts the recorder in front of rt; it fits rest.Config.Wrap.
func (r *Recorder) Wrap(rt http.RoundTripper) http.RoundTripper {
	return recording{rec: r, next: rt}
}

// Requests and Bytes say how much was recorded.
func (r *Recorder) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

// Bytes is the size of the recorded bodies.
func (r *Recorder) Bytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytes
}

type recording struct {
	rec  *Recorder
	next http.RoundTripper
}

// RoundTrip reads the whole answer, records it, and hands on a copy. A request that got no
// answer (a broken connection) is not recorded: the scan retried it, and the answer it got in
// the end is.
func (t recording) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the answer to %s %s: %w", req.Method, req.URL.Path, err)
	}
	elapsed := time.Since(t.rec.start)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	// The scan's own reading of this answer uses the number the bundle keeps, so the capture's
	// report and a replay of it compare Lease reads the same way (collect.SetRecordedElapsed).
	collect.SetRecordedElapsed(req.Context(), elapsed)
	t.rec.add(Key(req, t.rec.prefix), resp, body, elapsed)
	return resp, nil
}

func (r *Recorder) add(key string, resp *http.Response, body []byte, elapsed time.Duration) {
	ct := resp.Header.Get("Content-Type")
	ext := ".json"
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt != "application/json" {
		ext = ".txt" // controller logs
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	file := fmt.Sprintf("%06d%s", r.count, ext)
	r.bodies[file] = body
	r.bytes += int64(len(body))
	r.index[key] = append(r.index[key], Response{File: file, Status: resp.StatusCode, ContentType: ct, Date: resp.Header.Get("Date"), Elapsed: elapsed})
}
