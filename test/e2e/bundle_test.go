package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// TestCaptureAndScanOffline is issue 30 on a living cluster: a namespace holding a Widget
// (a custom resource) stuck Terminating on a finalizer nobody removes is captured; the bundle is scanned and asked
// why without a cluster, later, and its report is refused by fix.
func TestCaptureAndScanOffline(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{ControllerManager: true})
	cs, ctx := c.Clientset(), t.Context()
	const ns, secretValue = "bd-shop", "bundle-secret-value-3f9a1c07be"
	createNamespace(t, c, ns)
	// The scan lists Secrets' metadata at most, never their data: its value must be nowhere in
	// the bundle.
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		StringData: map[string]string{"password": secretValue}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stuckWidget(t, c, ns, "cart")
	widgets := c.Dynamic().Resource(teWidgets).Namespace(ns)
	wd := pluginOn(c.Kubeconfig)
	args := []string{"-n", ns, "--checks", teCheck, "--min-age", "0s", "--fail-on", "warning", "-o", "json"}
	live := wd.scan(t, args...).wantExit(2).report()
	cap := captureAndReplay(t, wd, args)
	offline := cap.offline
	f := teFind(t, offline, "Widget", "cart")
	if lf := teFind(t, live, "Widget", "cart"); lf.ID != f.ID || lf.RootCause.ID != f.RootCause.ID {
		t.Errorf("offline finding %s %s, live %s %s", f.ID, f.RootCause.ID, lf.ID, lf.RootCause.ID)
	}
	fi, err := os.Stat(cap.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("capture of %s: %s, %d answers, %d bytes of answers, %d bytes on disk", ns, cap.took.Round(time.Millisecond),
		cap.bundle.Manifest.Requests, cap.bundle.Manifest.Bytes, fi.Size())

	t.Run("bundle.yaml says what was captured, from where, how", func(t *testing.T) {
		m := cap.bundle.Manifest
		if m.APIVersion != bundle.APIVersion || m.Kind != bundle.ManifestKind {
			t.Errorf("bundle.yaml is %s %s", m.APIVersion, m.Kind)
		}
		if m.ClusterID == "" || m.ClusterID != live.Metadata.ClusterID || m.ServerVersion != live.Metadata.ServerVersion || m.Context != live.Metadata.Context {
			t.Errorf("bundle.yaml names cluster %q %q %q, the live scan %q %q %q", m.ClusterID, m.ServerVersion, m.Context,
				live.Metadata.ClusterID, live.Metadata.ServerVersion, live.Metadata.Context)
		}
		if !m.CapturedAt.UTC().Truncate(time.Second).Equal(cap.bundle.Report.Metadata.GeneratedAt) {
			t.Errorf("capturedAt %s, the capture's report was generated at %s", m.CapturedAt, cap.bundle.Report.Metadata.GeneratedAt)
		}
		want := bundle.Plan{Namespace: ns, Checks: []string{teCheck}, KruiseNamespace: "kruise-system", KruiseDeployment: "kruise-controller-manager", MinAge: "0s"}
		if got, _ := json.Marshal(m.Plan); string(got) != string(must(json.Marshal(want))) {
			t.Errorf("plan %s, want %s", got, must(json.Marshal(want)))
		}
		if m.Requests == 0 || m.Bytes == 0 {
			t.Errorf("bundle.yaml counts %d answers of %d bytes", m.Requests, m.Bytes)
		}
		if files := archived(t, cap.path); bytesContain(files, secretValue) != "" {
			t.Errorf("the Secret's value is in %s", bytesContain(files, secretValue))
		}
	})

	off := wd.offline(t)
	t.Run("ages stay those at capture time, whenever the bundle is scanned", func(t *testing.T) {
		later := off.withClockSkew("3h").run(t, append([]string{"scan", "--from-bundle", cap.path}, args...)).wantExit(2).report()
		if diff := reportDiff(cap.bundle.Report, later); diff != "" {
			t.Errorf("three hours later the bundle scans otherwise: %s", diff)
		}
		off.run(t, []string{"scan", "--from-bundle", cap.path, "--fail-on", "never"}).wantExit(0)
		table := off.run(t, []string{"scan", "--from-bundle", cap.path, "--fail-on", "warning"}).wantExit(2)
		if !strings.Contains(table.stdout, "cart") {
			t.Errorf("the table names no cart:\n%s", table.stdout)
		}
	})

	t.Run("an input the bundle lacks could not be looked at: exit 1", func(t *testing.T) {
		// The bundle unpacked, without the answers of the pod list: a scan of it cannot say the
		// namespace's pods are healthy.
		dir := t.TempDir()
		var index bundle.Index
		for name, data := range archived(t, cap.path) {
			if name == bundle.IndexFile {
				if err := json.Unmarshal(data, &index); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		dropped := 0
		pods := "GET /api/v1/namespaces/" + ns + "/pods"
		for k := range index {
			if strings.HasPrefix(k, pods+"?") || strings.HasPrefix(k, pods+" ") {
				delete(index, k)
				dropped++
			}
		}
		if dropped == 0 {
			t.Fatalf("the bundle holds no list of the pods of %s", ns)
		}
		if err := os.WriteFile(filepath.Join(dir, bundle.IndexFile), must(json.Marshal(index)), 0o600); err != nil {
			t.Fatal(err)
		}
		run := off.run(t, append([]string{"scan", "--from-bundle", dir}, args...)).wantExit(1)
		rep := run.report()
		if !slices.ContainsFunc(rep.Coverage.Unread, func(n report.InputNote) bool { return strings.Contains(n.Reason, "not in the bundle") }) {
			t.Errorf("coverage.unread does not say what was not in the bundle: %+v", rep.Coverage.Unread)
		}
	})

	t.Run("why --from-bundle gives the offline scan's finding", func(t *testing.T) {
		doc := off.run(t, []string{"why", "widget.example.com/cart", "-n", ns, "--from-bundle", cap.path, "-o", "json", "--fail-on", "warning"}).wantExit(2).report()
		if len(doc.Findings) == 0 || doc.Findings[0].ID != f.ID || doc.Findings[0].RootCause.ID != f.RootCause.ID {
			t.Fatalf("why --from-bundle reported:\n%s\nwant %s %s", summaries(doc), f.ID, f.RootCause.ID)
		}
		if diff := findingDiff(f, doc.Findings[0]); diff != "" {
			t.Errorf("why --from-bundle differs from the offline scan: %s", diff)
		}
		tree := off.run(t, []string{"why", "widgets", "cart", "-n", ns, "--from-bundle", cap.path, "--fail-on", "warning"}).wantExit(2)
		if !strings.Contains(tree.stdout, f.ID) {
			t.Errorf("the tree names no %s:\n%s", f.ID, tree.stdout)
		}
		off.run(t, []string{"why", "widget.example.com/cart", "-n", ns, "--from-bundle", cap.path, "--watch"}).wantExit(1)
		off.run(t, []string{"why", "widget.example.com/gone", "-n", ns, "--from-bundle", cap.path}).wantExit(1)
	})

	t.Run("fix refuses a report made offline and writes nothing", func(t *testing.T) {
		saved := filepath.Join(t.TempDir(), "offline.json")
		out := off.run(t, append([]string{"scan", "--from-bundle", cap.path}, args...)).wantExit(2).stdout
		if err := os.WriteFile(saved, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		before, err := widgets.Get(ctx, "cart", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		run := wd.fix(t, "--from-report", saved, f.ID, "--yes").wantExit(3)
		if !strings.Contains(run.stderr, "offline") {
			t.Errorf("fix says:\n%s", run.stderr)
		}
		after, err := widgets.Get(ctx, "cart", metav1.GetOptions{})
		if err != nil || after.GetResourceVersion() != before.GetResourceVersion() || len(after.GetFinalizers()) != 1 {
			t.Errorf("the Widget changed: %v %v", after, err)
		}
	})

	t.Run("what cannot be read, or is asked otherwise, is one clear error", func(t *testing.T) {
		junk := filepath.Join(t.TempDir(), "notes.txt")
		if err := os.WriteFile(junk, []byte("not a bundle\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, a := range [][]string{
			{"scan", "--from-bundle", filepath.Join(t.TempDir(), "missing.tgz")},
			{"scan", "--from-bundle", junk},
			{"scan", "--from-bundle", cap.path, "-A"},
			{"scan", "--from-bundle", cap.path, "-n", "other"},
			{"scan", "--from-bundle", cap.path, "--context", "prod"},
		} {
			run := off.run(t, a).wantExit(1)
			if lines := strings.Split(strings.TrimSpace(run.stderr), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") {
				t.Errorf("%v: stderr is not one error line:\n%s", a, run.stderr)
			}
		}
		run := wd.run(t, captureArgs(args, cap.path)).wantExit(1)
		if !strings.Contains(run.stderr, "exists") {
			t.Errorf("a capture onto an existing bundle says:\n%s", run.stderr)
		}
		if fi2, err := os.Stat(cap.path); err != nil || fi2.Size() != fi.Size() {
			t.Errorf("the existing bundle changed: %v", err)
		}
	})
}

// stuckWidget leaves the Widget (a custom resource) name in ns Terminating on a finalizer
// nobody removes. An operator creates its object with its finalizer, and is gone when the object
// is deleted: the apiserver only sets deletionTimestamp while a finalizer is left
// (k8s.io/apiserver v1.37.1 pkg/registry/generic/registry/store.go, Store.Delete and
// updateForGracefulDeletionAndFinalizers).
func stuckWidget(t *testing.T, c *testcluster.Cluster, ns, name string) {
	t.Helper()
	ctx := t.Context()
	installLooseCRD(t, c, "example.com", "Widget", "widgets")
	widgets := c.Dynamic().Resource(teWidgets).Namespace(ns)
	if _, err := widgets.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "finalizers": []any{"example.com/protect"}},
	}}, metav1.CreateOptions{FieldManager: "widget-operator"}); err != nil {
		t.Fatal(err)
	}
	if err := widgets.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestCaptureIntoADirectory: `capture -o DIR/` writes the bundle unpacked, and scan
// --from-bundle DIR reports what scan --from-bundle FILE.tgz reports of a capture of the same
// state. Neither capture leaves anything beside its bundle (the answers are recorded into a
// temporary directory that is gone once the bundle is written), and a second capture into the
// directory fails and leaves the bundle there as it was.
func TestCaptureIntoADirectory(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{ControllerManager: true})
	const ns = "bd-dir"
	createNamespace(t, c, ns)
	stuckWidget(t, c, ns, "cart")
	wd := pluginOn(c.Kubeconfig)
	args := []string{"-n", ns, "--checks", teCheck, "--min-age", "0s", "--fail-on", "warning", "-o", "json"}
	archive := captureAndReplay(t, wd, args)
	parent := t.TempDir()
	dir := captureAndReplayAt(t, wd, args, filepath.Join(parent, "bundle")+"/")

	a, d := teFind(t, archive.offline, "Widget", "cart"), teFind(t, dir.offline, "Widget", "cart")
	if a.ID != d.ID || a.RootCause.ID != d.RootCause.ID {
		t.Errorf("from the directory: finding %s %s, from the archive %s %s", d.ID, d.RootCause.ID, a.ID, a.RootCause.ID)
	}
	for _, problem := range liveDiffers(archive.offline, dir.offline) {
		t.Errorf("the directory's scan differs from the archive's: %s", problem)
	}

	// The directory holds bundle.yaml, report.json, the index and the answers it names; nothing
	// else, here or beside the archive.
	files := dirFiles(t, parent)
	want := []string{"bundle/" + bundle.ManifestFile, "bundle/" + bundle.ReportFile, "bundle/" + bundle.IndexFile}
	for _, answers := range dir.bundle.Index {
		for _, r := range answers {
			want = append(want, "bundle/"+bundle.ResponsesDir+"/"+r.File)
		}
	}
	if slices.Sort(want); !slices.Equal(slices.Sorted(maps.Keys(files)), want) {
		t.Errorf("the capture's directory holds %v, want %v", slices.Sorted(maps.Keys(files)), want)
	}
	if len(want) != dir.bundle.Manifest.Requests+3 {
		t.Errorf("bundle.yaml counts %d answers, the index names %d", dir.bundle.Manifest.Requests, len(want)-3)
	}
	if beside := slices.Sorted(maps.Keys(dirFiles(t, filepath.Dir(archive.path)))); !slices.Equal(beside, []string{filepath.Base(archive.path)}) {
		t.Errorf("beside the archive: %v", beside)
	}

	run := wd.run(t, captureArgs(args, dir.path)).wantExit(1)
	if !strings.Contains(run.stderr, "already holds a bundle") {
		t.Errorf("a capture into a directory holding a bundle says:\n%s", run.stderr)
	}
	if after := dirFiles(t, parent); !maps.EqualFunc(files, after, bytes.Equal) {
		t.Error("a second capture into the directory changed its files")
	}
}

// dirFiles reads every file below dir, by slash path relative to it.
func dirFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// archived reads every file of a gzip'd tar.
func archived(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
}

// bytesContain names a file that holds s, empty when none does.
func bytesContain(files map[string][]byte, s string) string {
	for name, data := range files {
		if strings.Contains(string(data), s) {
			return name
		}
	}
	return ""
}
