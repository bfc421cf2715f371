package bundle

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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
// clients of a scan (rest.Config.Wrap is applied to each). Each body goes to a file in a
// temporary directory beside the bundle as the scan reads it, so a capture holds no more in
// memory than the scan does; Write makes the bundle of them and Close removes the directory.
type Recorder struct {
	prefix string
	start  time.Time
	dest   target
	// dir holds the bodies being recorded, and the archive while it is written.
	dir string

	mu    sync.Mutex
	index Index
	// sizes are the bodies recorded whole, by file name: the ones the index names.
	sizes map[string]int64
	// files numbers the answers' files, those not recorded in the end included.
	files int
	bytes int64
	// err is the first failure to record a body (a full disk): the bundle would lack it.
	err error
	// written is set once Write made the bundle.
	written bool
}

// NewRecorder records the answers of the server at host (its address, as in rest.Config.Host)
// for a bundle to be written to dest (Write). It refuses a dest that already holds a file or a
// bundle now, before the scan, and creates the temporary directory the bodies go to; the caller
// must Close the Recorder on every path.
func NewRecorder(host, dest string) (*Recorder, error) {
	t, err := newTarget(dest)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(t.tempParent(), ".workloaddoctor-capture-*")
	if err != nil {
		t.undo()
		return nil, fmt.Errorf("create a temporary directory for the answers: %w", err)
	}
	return &Recorder{prefix: pathPrefix(host), start: time.Now(), dest: t, dir: dir, index: Index{}, sizes: map[string]int64{}}, nil
}

// Close removes the recorded bodies, and the directory NewRecorder created for a bundle that
// was never written.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := os.RemoveAll(r.dir)
	if !r.written {
		r.dest.undo()
	}
	if err != nil {
		return fmt.Errorf("remove the recorded answers: %w", err)
	}
	return nil
}

// Wrap puts the recorder in front of rt; it fits rest.Config.Wrap.
func (r *Recorder) Wrap(rt http.RoundTripper) http.RoundTripper {
	return recording{rec: r, next: rt}
}

// Requests and Bytes say how much was recorded.
func (r *Recorder) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sizes)
}

// Bytes is the size of the recorded bodies.
func (r *Recorder) Bytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytes
}

// body reads a recorded body back.
func (r *Recorder) body(file string) (io.ReadCloser, error) {
	return os.Open(filepath.Join(r.dir, file))
}

type recording struct {
	rec  *Recorder
	next http.RoundTripper
}

// RoundTrip hands the answer on as it comes, copying each byte the caller reads into a file.
// The answer is recorded once its body was read to the end (tee.finish). A request that got no
// answer, or whose body broke off, is not recorded: the scan retried it, and the answer it got
// in the end is.
func (t recording) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	elapsed := time.Since(t.rec.start)
	ct := resp.Header.Get("Content-Type")
	ext := ".json"
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt != "application/json" {
		ext = ".txt" // controller logs
	}
	f, name, err := t.rec.create(ext)
	if err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("record the answer to %s %s: %w", req.Method, req.URL.Path, err)
	}
	// The scan's own reading of this answer uses the number the bundle keeps, so the capture's
	// report and a replay of it compare Lease reads the same way (collect.SetRecordedElapsed).
	collect.SetRecordedElapsed(req.Context(), elapsed)
	resp.Body = &tee{
		rec: t.rec, key: Key(req, t.rec.prefix), body: resp.Body, f: f, w: bufio.NewWriterSize(f, 32<<10),
		answer: Response{File: name, Status: resp.StatusCode, ContentType: ct, Date: resp.Header.Get("Date"), Elapsed: elapsed},
	}
	return resp, nil
}

// create opens the file of the next answer.
func (r *Recorder) create(ext string) (*os.File, string, error) {
	r.mu.Lock()
	r.files++
	name := fmt.Sprintf("%06d%s", r.files, ext)
	r.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(r.dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	return f, name, err
}

// finish indexes an answer recorded whole, or forgets one that broke off or could not be
// written; a write failure fails the bundle.
func (r *Recorder) finish(key string, a Response, size int64, readErr, writeErr error) {
	if readErr != nil || writeErr != nil {
		os.Remove(filepath.Join(r.dir, a.File))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case writeErr != nil:
		if r.err == nil {
			r.err = fmt.Errorf("record the answer %s: %w", a.File, writeErr)
		}
	case readErr == nil:
		r.sizes[a.File] = size
		r.bytes += size
		r.index[key] = append(r.index[key], a)
	}
}

// tee is a recorded answer's body: what the caller reads is written to the answer's file too.
type tee struct {
	rec    *Recorder
	key    string
	answer Response
	body   io.ReadCloser

	// mu is held by Read: a Close that finds it held closes the body under a Read in flight.
	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
	n    int64
	werr error
	done bool
}

func (b *tee) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.body.Read(p)
	b.record(p[:n])
	switch {
	case errors.Is(err, io.EOF):
		b.finish(nil)
	case err != nil:
		b.finish(err)
	}
	return n, err
}

// Write lets the rest of a body be drained into the file.
func (b *tee) Write(p []byte) (int, error) {
	b.record(p)
	return len(p), nil
}

func (b *tee) record(p []byte) {
	if b.done || b.werr != nil || len(p) == 0 {
		return
	}
	_, b.werr = b.w.Write(p)
	b.n += int64(len(p))
}

// Close records an answer the caller stopped reading whole: the rest is read into the file, so
// a replay serves what the apiserver sent, and the replayed scan stops where this one did. When
// the rest cannot be read (the request was cancelled, the connection broke) the answer is not
// recorded, so a replay never serves it cut short as if whole.
func (b *tee) Close() error {
	if !b.mu.TryLock() {
		// A Read is in flight elsewhere: closing the body ends it, and that answer is not
		// recorded (Read sees the error).
		err := b.body.Close()
		b.mu.Lock()
		defer b.mu.Unlock()
		b.finish(errClosedEarly)
		return err
	}
	defer b.mu.Unlock()
	if !b.done {
		_, err := io.Copy(b, b.body)
		b.finish(err)
	}
	return b.body.Close()
}

var errClosedEarly = errors.New("closed while being read")

func (b *tee) finish(readErr error) {
	if b.done {
		return
	}
	b.done = true
	werr := b.werr
	if err := b.w.Flush(); werr == nil {
		werr = err
	}
	if err := b.f.Close(); werr == nil {
		werr = err
	}
	b.rec.finish(b.key, b.answer, b.n, readErr, werr)
}

// target is where a bundle goes: an archive file, or a directory to unpack it into.
type target struct {
	path string
	dir  bool
	// made is the directory NewRecorder created for the unpacked layout, removed again (when
	// still empty) if no bundle is written into it.
	made string
}

// newTarget refuses a dest that holds a file or a bundle already, and creates the directory of
// the unpacked layout so that the answers can be recorded inside it.
func newTarget(dest string) (target, error) {
	info, err := os.Stat(dest)
	t := target{path: dest, dir: strings.HasSuffix(dest, "/") || err == nil && info.IsDir()}
	switch {
	case t.dir && err == nil:
		if _, err := os.Lstat(filepath.Join(dest, ManifestFile)); err == nil {
			return t, fmt.Errorf("%s already holds a bundle: choose another directory, a capture never overwrites one", dest)
		}
	case t.dir:
		if err := os.MkdirAll(dest, 0o755); err != nil {
			return t, fmt.Errorf("create %s: %w", dest, err)
		}
		t.made = dest
	case err == nil:
		return t, fmt.Errorf("%s exists: choose another name, a capture never overwrites a file", dest)
	case !errors.Is(err, fs.ErrNotExist):
		return t, fmt.Errorf("write the bundle to %s: %w", dest, err)
	}
	return t, nil
}

// tempParent is where the answers are recorded: beside the archive, or inside the directory,
// on the filesystem the bundle goes to, so that they are moved there, not copied.
func (t target) tempParent() string {
	if t.dir {
		return t.path
	}
	return filepath.Dir(t.path)
}

func (t target) undo() {
	if t.made != "" {
		os.Remove(t.made) // only when empty
	}
}
