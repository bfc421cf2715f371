package bundle

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle/source"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func request(t *testing.T, ctx context.Context, base, target, accept string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	return req
}

func TestKey(t *testing.T) {
	ctx := context.Background()
	a := Key(request(t, ctx, "https://h", "/api/v1/pods?limit=500&labelSelector=app%3Dweb&timeout=32s", "application/json"), "")
	b := Key(request(t, ctx, "https://h", "/api/v1/pods?labelSelector=app%3Dweb&limit=500", "application/json"), "")
	if a != b {
		t.Errorf("the query's order or the timeout changed the key: %q, %q", a, b)
	}
	meta := Key(request(t, ctx, "https://h", "/api/v1/pods?labelSelector=app%3Dweb&limit=500", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"), "")
	if meta == a {
		t.Errorf("a metadata-only list has the key of a full list: %q", meta)
	}
	proxied := Key(request(t, ctx, "https://h/k8s/clusters/c-1", "/api/v1/pods?limit=500&labelSelector=app%3Dweb", "application/json"), "/k8s/clusters/c-1")
	if proxied != a {
		t.Errorf("the server's path prefix is in the key: %q, want %q", proxied, a)
	}
}

// record runs requests through a Recorder for a bundle at dest, in front of a server that
// numbers its answers.
func record(t *testing.T, dest string) *Recorder {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/forbidden" {
			w.WriteHeader(http.StatusForbidden)
		}
		fmt.Fprintf(w, `{"kind":"ConfigMapList","apiVersion":"v1","items":[{"metadata":{"name":"cm","namespace":"ns","resourceVersion":"%d"},"data":{"k":"v"}}]}`, n.Add(1))
	}))
	t.Cleanup(srv.Close)
	rec := newRecorder(t, srv.URL, dest)
	client := &http.Client{Transport: rec.Wrap(http.DefaultTransport)}
	for _, p := range []string{"/api/v1/configmaps", "/api/v1/configmaps", "/forbidden"} {
		var date collect.ServerDate
		resp, err := client.Do(request(t, collect.WithServerDate(context.Background(), &date), srv.URL, p, "application/json"))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		rec.mu.Lock()
		last := rec.index[Key(resp.Request, "")]
		rec.mu.Unlock()
		if got, want := date.Elapsed(time.Time{}), last[len(last)-1].Elapsed; got != want {
			t.Errorf("%s: the scan measured %s, the bundle keeps %s: a replay would not agree", p, got, want)
		}
	}
	return rec
}

// newRecorder is NewRecorder, closed when the test ends.
func newRecorder(t *testing.T, host, dest string) *Recorder {
	t.Helper()
	rec, err := NewRecorder(host, dest)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rec.Close(); err != nil {
			t.Error(err)
		}
	})
	return rec
}

func TestReplayOrderRepeatAndNotCaptured(t *testing.T) {
	rec := record(t, filepath.Join(t.TempDir(), "b.tgz"))
	rp := NewReplayer(rec.index, rec.body)
	client := &http.Client{Transport: rp}
	get := func(p, accept string) (int, string, error) {
		resp, err := client.Do(request(t, context.Background(), "http://bundle.invalid", p, accept))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	var versions []string
	for range 3 {
		_, body, err := get("/api/v1/configmaps", "application/json")
		if err != nil {
			t.Fatal(err)
		}
		_, v, _ := strings.Cut(body, `"resourceVersion":"`)
		versions = append(versions, v[:1])
	}
	if got := strings.Join(versions, ","); got != "1,2,2" {
		t.Errorf("answers replayed as %s, want the recorded order 1,2 then the last again", got)
	}
	if code, _, err := get("/forbidden", "application/json"); err != nil || code != http.StatusForbidden {
		t.Errorf("a recorded 403 replayed as %d, %v", code, err)
	}
	_, _, err := get("/api/v1/secrets", "application/json")
	var nc *source.NotCapturedError
	if !errors.As(err, &nc) || nc.Path != "/api/v1/secrets" {
		t.Errorf("a request never recorded: %v, want a NotCapturedError", err)
	}
	if _, _, err := get("/api/v1/configmaps", "application/json;as=Table;v=v1;g=meta.k8s.io"); !errors.As(err, &nc) {
		t.Errorf("another Accept of a recorded path: %v, want a NotCapturedError", err)
	}
}

func TestArchiveRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 28, 7, 0, 0, 123456789, time.UTC)
	rep := &report.Report{Metadata: report.Metadata{GeneratedAt: at.Truncate(time.Second), ClusterID: "uid-1"}}
	rep.Normalize()
	for _, dest := range []string{filepath.Join(t.TempDir(), "b.tgz"), t.TempDir() + "/unpacked/"} {
		rec := record(t, dest)
		m := &Manifest{CapturedAt: at, ClusterID: "uid-1", ServerVersion: "v1.37.1", Plan: Plan{Namespace: "ns", Checks: []string{"a"}}}
		if err := rec.Write(m, rep); err != nil {
			t.Fatal(err)
		}
		if _, err := NewRecorder("https://h", dest); err == nil {
			t.Errorf("%s: a second capture began where the first wrote its bundle", dest)
		}
		b, err := Open(dest)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		if !b.Source.CapturedAt.Equal(at) || b.Source.ClusterID != "uid-1" || b.Manifest.Plan.Namespace != "ns" || b.Manifest.Requests != 3 {
			t.Errorf("%s: opened %+v, %+v", dest, b.Source, b.Manifest)
		}
		if b.Report.Metadata.ClusterID != "uid-1" {
			t.Errorf("%s: report.json is %+v", dest, b.Report.Metadata)
		}
		if u, ok := b.Object("v1", "ConfigMap", "configmaps", "ns", "cm"); !ok || u.GetResourceVersion() == "" {
			t.Errorf("%s: the recorded ConfigMap was not found: %v", dest, u)
		}
		// An archive is unpacked to disk (its answers are streamed from there), and Close removes
		// that; a directory is read where it is and kept.
		unpacked := b.unpacked
		if (unpacked != "") != strings.HasSuffix(dest, ".tgz") {
			t.Errorf("%s: unpacked into %q", dest, unpacked)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(unpacked); unpacked != "" && !os.IsNotExist(err) {
			t.Errorf("%s: %s left after Close: %v", dest, unpacked, err)
		}
		if _, err := os.Stat(dest); err != nil {
			t.Errorf("%s: Close removed the bundle itself: %v", dest, err)
		}
	}
	junk := filepath.Join(t.TempDir(), "junk.tgz")
	if err := os.WriteFile(junk, []byte("not an archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(junk); err == nil {
		t.Error("a file that is no archive opened")
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.tgz")); err == nil {
		t.Error("a missing file opened")
	}
}

// An archive unpacks as tar extracts it: a name archived twice keeps its last entry, and names
// that would leave the directory are skipped.
func TestOpenFSUnpacksAsTarDoes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "b.tgz")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for _, e := range []struct{ name, body string }{{"responses/1.json", "first"}, {"../outside", "x"}, {"./responses/1.json", "last"}} {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o600, Size: int64(len(e.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []io.Closer{tw, gz, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	fsys, dir, err := openFS(p)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if got, err := fs.ReadFile(fsys, "responses/1.json"); err != nil || string(got) != "last" {
		t.Errorf("a name archived twice: %q, %v; want the last entry", got, err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "outside")); !os.IsNotExist(err) {
		t.Errorf("an entry outside the directory was written: %v", err)
	}
}
