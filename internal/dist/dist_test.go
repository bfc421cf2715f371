package dist

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/krewmanifest"
)

const repoRoot = "../.."

func testStamp() Stamp {
	return Stamp{Version: "v0.1.0", Commit: "0123abc", Date: "2026-01-02T03:04:05Z"}
}

// standIn is the BuildFunc of the release tests: a small executable per target instead of a
// cross-compiled plugin. Cross-compiling five platforms takes minutes and packing the real 30 MB
// binary five times is slow under -race, while krew never runs the binary: the archives,
// checksums and manifest go through the same code as in `make dist`. TestGoBuildStampsTheBinary
// covers the real build.
func standIn(_ context.Context, target Target, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, []byte("#!/bin/sh\necho stand-in for "+target.String()+"\n"), 0o755)
}

func releaseOptions(t *testing.T, build BuildFunc, out string) Options {
	t.Helper()
	tmpl, err := os.ReadFile(filepath.Join(repoRoot, "hack", "dist", "krew-manifest.tmpl.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return Options{Stamp: testStamp(), Targets: Targets(), Build: build,
		Files: []string{filepath.Join(repoRoot, "LICENSE"), filepath.Join(repoRoot, "README.md")}, Template: tmpl, OutDir: out}
}

func TestRelease(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	// Files of an earlier release go; anything else stays.
	stale := filepath.Join(out, "kubectl-workloaddoctor_v0.0.9_linux_amd64.tar.gz")
	keep := filepath.Join(out, "notes.txt")
	for _, f := range []string{stale, keep} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	res, err := Release(t.Context(), releaseOptions(t, standIn, out))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale archive of an earlier release is still there (stat: %v)", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("unrelated file was removed: %v", err)
	}

	want := []string{
		"kubectl-workloaddoctor_v0.1.0_darwin_amd64.tar.gz",
		"kubectl-workloaddoctor_v0.1.0_darwin_arm64.tar.gz",
		"kubectl-workloaddoctor_v0.1.0_linux_amd64.tar.gz",
		"kubectl-workloaddoctor_v0.1.0_linux_arm64.tar.gz",
		"kubectl-workloaddoctor_v0.1.0_windows_amd64.zip",
	}
	var got []string
	for _, a := range res.Artifacts {
		got = append(got, a.Name)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("archives %v, want %v", got, want)
	}

	t.Run("archives hold the binary, LICENSE and README.md", func(t *testing.T) {
		license, err := os.ReadFile(filepath.Join(repoRoot, "LICENSE"))
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range res.Artifacts {
			files := readArchive(t, filepath.Join(out, a.Name))
			var names []string
			for n := range files {
				names = append(names, n)
			}
			slices.Sort(names)
			wantNames := []string{"LICENSE", "README.md", a.Target.Bin()}
			slices.Sort(wantNames)
			if !slices.Equal(names, wantNames) {
				t.Errorf("%s holds %v, want %v", a.Name, names, wantNames)
			}
			if !bytes.Equal(files["LICENSE"].data, license) {
				t.Errorf("%s: LICENSE differs from the repository's", a.Name)
			}
			if a.Target.OS != "windows" && files[a.Target.Bin()].mode.Perm() != 0o755 {
				t.Errorf("%s: binary mode %v, want 0755", a.Name, files[a.Target.Bin()].mode)
			}
		}
	})

	t.Run("SHA256SUMS matches the archives", func(t *testing.T) {
		sums := readChecksums(t, res.Checksums)
		if len(sums) != len(want) {
			t.Errorf("SHA256SUMS has %d lines, want %d", len(sums), len(want))
		}
		for _, a := range res.Artifacts {
			data, err := os.ReadFile(filepath.Join(out, a.Name))
			if err != nil {
				t.Fatal(err)
			}
			if got := sha256Hex(data); sums[a.Name] != got || a.SHA256 != got {
				t.Errorf("%s: sha256 is %s, SHA256SUMS says %s, Release reported %s", a.Name, got, sums[a.Name], a.SHA256)
			}
		}
		if sha256sum, err := exec.LookPath("sha256sum"); err == nil {
			cmd := exec.CommandContext(t.Context(), sha256sum, "--check", "--strict", ChecksumsFile)
			cmd.Dir = out
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("sha256sum --check: %v\n%s", err, b)
			}
		}
	})

	t.Run("manifest validates and every archive installs", func(t *testing.T) {
		manifest, err := os.ReadFile(res.Manifest)
		if err != nil {
			t.Fatal(err)
		}
		p, err := krewmanifest.Parse(manifest)
		if err != nil {
			t.Fatal(err)
		}
		if err := krewmanifest.Validate(PluginName, p); err != nil {
			t.Fatal(err)
		}
		if p.Spec.Version != "v0.1.0" {
			t.Errorf("spec.version = %q, want v0.1.0", p.Spec.Version)
		}
		for _, pl := range p.Spec.Platforms {
			wantURI := "https://github.com/workloaddoctor/kubectl-workloaddoctor/releases/download/v0.1.0/" +
				Target{OS: pl.Selector.MatchLabels["os"], Arch: pl.Selector.MatchLabels["arch"]}.Archive("v0.1.0")
			if pl.URI != wantURI {
				t.Errorf("uri %s, want %s", pl.URI, wantURI)
			}
		}
		if err := VerifyRelease(out, manifest, t.TempDir()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("same input gives a byte-identical archive", func(t *testing.T) {
		first := res.Artifacts[0]
		o := releaseOptions(t, standIn, t.TempDir())
		o.Targets = []Target{first.Target}
		again, err := Release(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		if again.Artifacts[0].SHA256 != first.SHA256 {
			t.Errorf("%s: sha256 %s, then %s from the same binary", first.Name, first.SHA256, again.Artifacts[0].SHA256)
		}
	})
}

// TestGoBuildStampsTheBinary builds the real plugin for this machine the way the release builds
// every platform, and checks the stamp reaches `version -o json`.
func TestGoBuildStampsTheBinary(t *testing.T) {
	t.Parallel()
	host := Target{OS: runtime.GOOS, Arch: runtime.GOARCH}
	bin := filepath.Join(t.TempDir(), host.Bin())
	s := testStamp()
	// `go test` puts its own GOROOT/bin first on PATH, so "go" is the toolchain running the test.
	if err := GoBuild("go", repoRoot, s)(t.Context(), host, bin); err != nil {
		t.Fatal(err)
	}
	b, err := exec.CommandContext(t.Context(), bin, "version", "--client", "-o", "json").Output()
	if err != nil {
		t.Fatalf("version --client -o json: %v", err)
	}
	var doc struct {
		PluginVersion struct{ Version, Commit, Date string } `json:"pluginVersion"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("version -o json: %v\n%s", err, b)
	}
	if v := doc.PluginVersion; v.Version != s.Version || v.Commit != s.Commit || v.Date != s.Date {
		t.Errorf("pluginVersion = %+v, want %+v", v, s)
	}
}

func TestReleaseRefusesBadInput(t *testing.T) {
	noBuild := func(context.Context, Target, string) error { return errors.New("must not build") }
	cases := []struct {
		name   string
		mutate func(o *Options)
		want   string
	}{
		{name: "version without v", mutate: func(o *Options) { o.Stamp.Version = "0.1.0" }, want: `does not start with "v"`},
		{name: "version not semver", mutate: func(o *Options) { o.Stamp.Version = "v1" }, want: "release version"},
		{name: "commit with a space", mutate: func(o *Options) { o.Stamp.Commit = "abc -X x=y" }, want: "commit"},
		{name: "date not RFC 3339", mutate: func(o *Options) { o.Stamp.Date = "yesterday" }, want: "RFC 3339"},
		{name: "missing file", mutate: func(o *Options) { o.Files = append(o.Files, filepath.Join(repoRoot, "NO-SUCH-FILE")) }, want: "NO-SUCH-FILE"},
		{name: "two files of one name", mutate: func(o *Options) { o.Files = append(o.Files, o.Files[0]) }, want: "two files named LICENSE"},
		{name: "no targets", mutate: func(o *Options) { o.Targets = nil }, want: "no targets"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := releaseOptions(t, noBuild, t.TempDir())
			tc.mutate(&o)
			_, err := Release(t.Context(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Release() = %v, want an error containing %q", err, tc.want)
			}
		})
	}

	t.Run("a manifest krew would refuse fails the release", func(t *testing.T) {
		o := releaseOptions(t, func(_ context.Context, _ Target, out string) error {
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return err
			}
			return os.WriteFile(out, []byte("bin"), 0o755)
		}, t.TempDir())
		o.Template = bytes.Replace(o.Template, []byte("- from: LICENSE"), []byte("- from: COPYING"), -1)
		_, err := Release(t.Context(), o)
		if err == nil || !strings.Contains(err.Error(), "does not pass validation") {
			t.Fatalf("Release() = %v, want a validation failure", err)
		}
	})
}

func TestArchivesAreReproducible(t *testing.T) {
	es := []Entry{{Name: "b", Data: []byte("bee"), Mode: 0o644}, {Name: "a", Data: []byte("ay"), Mode: 0o755}}
	rev := []Entry{es[1], es[0]}
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for name, pack := range map[string]func([]Entry, time.Time) ([]byte, error){"tar.gz": TarGz, "zip": Zip} {
		t.Run(name, func(t *testing.T) {
			one, err := pack(es, when)
			if err != nil {
				t.Fatal(err)
			}
			two, err := pack(rev, when.In(time.FixedZone("X", 3600)))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(one, two) {
				t.Error("same entries in another order or time zone give different bytes")
			}
			other, err := pack(es, when.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(one, other) {
				t.Error("the entry time does not reach the archive")
			}
			if _, err := pack(append(es, es[0]), when); err == nil {
				t.Error("two entries of one name were packed")
			}
		})
	}
}

type archived struct {
	data []byte
	mode fs.FileMode
}

func readArchive(t *testing.T, path string) map[string]archived {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]archived{}
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			out[f.Name] = archived{b, f.Mode()}
		}
		return out
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[hdr.Name] = archived{b, fs.FileMode(hdr.Mode)}
	}
}

func readChecksums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not `SUM  NAME`", sc.Text())
		}
		sums[name] = sum
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sums
}
