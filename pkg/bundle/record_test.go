package bundle

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle/source"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// podList is a list large enough to come in many reads and chunks.
func podList(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metadata":{"name":"web-%d","namespace":"shop"},"status":{"phase":"Running"}}`, i)
	}
	b.WriteString("]}\n")
	return b.Bytes()
}

// TestRecordingTeesTheBodyAsItIsRead: the caller reads the bytes the apiserver sent (gzip'd on
// the wire, or chunked), the bundle keeps those bytes, and a body the caller stops reading is
// recorded whole; a body that breaks off, or whose request is cancelled, is not recorded, so a
// replay never serves it as a whole answer.
func TestRecordingTeesTheBodyAsItIsRead(t *testing.T) {
	list := podList(3000) // ~250 KB
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			gz.Write(list)
			gz.Close()
		case "/api/v1/chunked", "/api/v1/partial":
			for c := range slices.Chunk(list, 10_000) {
				w.Write(c)
				w.(http.Flusher).Flush()
			}
		case "/api/v1/cut":
			// The connection breaks after a part of the body its Content-Length announced.
			w.Header().Set("Content-Length", strconv.Itoa(len(list)))
			w.Write(list[:len(list)/2])
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		case "/api/v1/stalled":
			// Half the body, then nothing until the client gives up.
			w.Write(list[:len(list)/2])
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	rec := newRecorder(t, srv.URL, filepath.Join(t.TempDir(), "b.tgz"))
	// The transport asks for gzip itself and inflates the answer, as client-go's does.
	client := &http.Client{Transport: rec.Wrap(&http.Transport{})}
	get := func(ctx context.Context, p string, read func(io.Reader) ([]byte, error)) ([]byte, error) {
		resp, err := client.Do(request(t, ctx, srv.URL, p, "application/json"))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return read(resp.Body)
	}
	recorded := func(p string) ([]byte, bool) {
		rec.mu.Lock()
		answers := rec.index["GET "+p+" application/json"]
		rec.mu.Unlock()
		if len(answers) != 1 {
			return nil, false
		}
		f, err := rec.body(answers[0].File)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		return b, true
	}

	for _, p := range []string{"/api/v1/gzip", "/api/v1/chunked"} {
		got, err := get(t.Context(), p, io.ReadAll)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if !bytes.Equal(got, list) {
			t.Errorf("%s: the caller read %d bytes, not the %d the server sent", p, len(got), len(list))
		}
		if b, ok := recorded(p); !ok || !bytes.Equal(b, list) {
			t.Errorf("%s: recorded %d bytes (%v), want the %d the caller read", p, len(b), ok, len(list))
		}
	}

	head, err := get(t.Context(), "/api/v1/partial", func(r io.Reader) ([]byte, error) {
		b := make([]byte, 100)
		_, err := io.ReadFull(r, b)
		return b, err
	})
	if err != nil || !bytes.Equal(head, list[:100]) {
		t.Fatalf("the first bytes of a body: %q, %v", head, err)
	}
	if b, ok := recorded("/api/v1/partial"); !ok || !bytes.Equal(b, list) {
		t.Errorf("a body read in part was recorded as %d bytes (%v), want the whole %d", len(b), ok, len(list))
	}

	if _, err := get(t.Context(), "/api/v1/cut", io.ReadAll); err == nil {
		t.Error("a body cut short read without an error")
	}
	ctx, cancel := context.WithCancel(t.Context())
	if _, err := get(ctx, "/api/v1/stalled", func(r io.Reader) ([]byte, error) {
		b := make([]byte, 100)
		_, err := io.ReadFull(r, b)
		cancel() // the caller gives up, then closes the body
		return b, err
	}); err != nil {
		t.Fatal(err)
	}
	rp := NewReplayer(rec.index, rec.body)
	var nc *source.NotCapturedError
	for _, p := range []string{"/api/v1/cut", "/api/v1/stalled"} {
		if b, ok := recorded(p); ok {
			t.Errorf("%s: an answer cut short was recorded (%d bytes)", p, len(b))
		}
		if _, err := rp.RoundTrip(request(t, t.Context(), "http://bundle.invalid", p, "application/json")); !errors.As(err, &nc) {
			t.Errorf("%s: replayed with %v, want a NotCapturedError", p, err)
		}
	}
	if got, want := rec.Requests(), 3; got != want {
		t.Errorf("%d answers recorded, want %d", got, want)
	}
	if got, want := rec.Bytes(), int64(3*len(list)); got != want {
		t.Errorf("%d bytes recorded, want %d", got, want)
	}
	files, err := os.ReadDir(rec.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Errorf("the temporary directory holds %d files, want the 3 answers recorded whole", len(files))
	}
}

// TestRecorderRemovesItsTemporaryFiles: whether the bundle is written or not, Close leaves
// nothing beside it but the bundle, and a directory made for a bundle never written is gone.
func TestRecorderRemovesItsTemporaryFiles(t *testing.T) {
	rep := &report.Report{}
	for _, layout := range []string{"b.tgz", "unpacked/"} {
		for _, written := range []bool{true, false} {
			parent := t.TempDir()
			dest := filepath.Join(parent, layout)
			if strings.HasSuffix(layout, "/") {
				dest += "/"
			}
			rec := record(t, dest)
			if written {
				if err := rec.Write(&Manifest{}, rep); err != nil {
					t.Fatal(err)
				}
			}
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			var left []string
			filepath.WalkDir(parent, func(p string, d os.DirEntry, err error) error {
				if rel, _ := filepath.Rel(parent, p); rel != "." {
					left = append(left, filepath.ToSlash(rel))
				}
				return err
			})
			var want []string
			switch {
			case written && layout == "b.tgz":
				want = []string{"b.tgz"}
			case written:
				want = []string{"unpacked", "unpacked/bundle.yaml", "unpacked/report.json", "unpacked/responses",
					"unpacked/responses/000001.json", "unpacked/responses/000002.json", "unpacked/responses/000003.json", "unpacked/responses/index.json"}
			}
			if !slices.Equal(left, want) {
				t.Errorf("%s, written %v: left %v, want %v", layout, written, left, want)
			}
		}
	}
}

// noHardLinks is os.Link on a filesystem without hard links.
func noHardLinks(oldname, newname string) error {
	return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: syscall.EXDEV}
}

// TestBundleNeverOverwrites: a path that holds a file when the bundle is written (another
// capture's, or anyone's) is left as it was and the capture fails, with hard links and on a
// filesystem without them.
func TestBundleNeverOverwrites(t *testing.T) {
	links := map[string]func(string, string) error{"hard links": os.Link, "no hard links": noHardLinks}
	rep := &report.Report{}
	for what, link := range links {
		t.Run(what, func(t *testing.T) {
			archive := filepath.Join(t.TempDir(), "b.tgz")
			dir := filepath.Join(t.TempDir(), "unpacked") + "/"
			for _, dest := range []string{archive, dir} {
				// Two captures to one path begin before either writes: the second finds the
				// first's bundle there when it writes.
				first, second := record(t, dest), record(t, dest)
				if err := first.write(&Manifest{Context: "first"}, rep, link); err != nil {
					t.Fatalf("%s: %v", dest, err)
				}
				before := snapshotFiles(t, dest)
				if err := second.write(&Manifest{Context: "second"}, rep, link); err == nil {
					t.Errorf("%s: the second capture wrote over the first", dest)
				}
				if after := snapshotFiles(t, dest); !maps.Equal(before, after) {
					t.Errorf("%s: the first capture's bundle changed", dest)
				}
				b, err := Open(dest)
				if err != nil || b.Manifest.Context != "first" || b.Manifest.Requests != 3 {
					t.Errorf("%s: opened %v, %v: want the first capture's bundle", dest, b, err)
				}
				if err == nil {
					_ = b.Close()
				}
			}

			// A file appears at the archive's path while the scan runs.
			taken := filepath.Join(t.TempDir(), "b.tgz")
			rec := record(t, taken)
			if err := os.WriteFile(taken, []byte("precious"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := rec.write(&Manifest{}, rep, link); err == nil {
				t.Error("the capture wrote over a file at its path")
			}
			if b, _ := os.ReadFile(taken); string(b) != "precious" {
				t.Errorf("the file at the archive's path now holds %d bytes", len(b))
			}

			// A directory with no bundle, but a file where one of the answers goes: the capture
			// fails, leaves that file, and takes back what it wrote.
			stray := filepath.Join(t.TempDir(), "stray") + "/"
			rec = record(t, stray)
			if err := os.MkdirAll(filepath.Join(stray, ResponsesDir), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(stray, ResponsesDir, "000002.json"), []byte("precious"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := rec.write(&Manifest{}, rep, link); err == nil {
				t.Error("the capture wrote over a file in its directory")
			}
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			if got := snapshotFiles(t, stray); len(got) != 1 || got["responses/000002.json"] != "precious" {
				t.Errorf("the directory holds %v after a failed capture, want only the file that was there", slices.Sorted(maps.Keys(got)))
			}
		})
	}
}

// snapshotFiles is the content of the file p, or of the files below the directory p, by path.
func snapshotFiles(t *testing.T, p string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(p, func(f string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(f)
		rel, _ := filepath.Rel(p, f)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
