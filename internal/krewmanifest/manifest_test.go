package krewmanifest_test

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/dist"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/krewmanifest"
)

const (
	repoRoot   = "../.."
	releaseURL = "https://github.com/workloaddoctor/kubectl-workloaddoctor/releases/download/"
)

// TestCheckedInManifest validates krew-manifest.yaml, the manifest of the latest release that goes
// to krew-index as workloaddoctor.yaml, and checks it is what the template renders for that release.
func TestCheckedInManifest(t *testing.T) {
	path := filepath.Join(repoRoot, "krew-manifest.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := krewmanifest.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := krewmanifest.Validate(dist.PluginName, p); err != nil {
		t.Fatal(err)
	}

	// One platform per release target, in the release's order, each at its release download URL.
	targets := dist.Targets()
	if len(p.Spec.Platforms) != len(targets) {
		t.Fatalf("%d platforms, want %d (%v)", len(p.Spec.Platforms), len(targets), targets)
	}
	var artifacts []dist.Artifact
	for i, tg := range targets {
		pl := p.Spec.Platforms[i]
		if l := pl.Selector.MatchLabels; l["os"] != tg.OS || l["arch"] != tg.Arch {
			t.Errorf("spec.platforms[%d] selects %v, want %s", i, l, tg)
		}
		if want := releaseURL + p.Spec.Version + "/" + tg.Archive(p.Spec.Version); pl.URI != want {
			t.Errorf("spec.platforms[%d].uri = %s, want %s", i, pl.URI, want)
		}
		artifacts = append(artifacts, dist.Artifact{Target: tg, Name: tg.Archive(p.Spec.Version), SHA256: pl.Sha256})
	}

	// Edited by hand or left behind by a template change: either way it is not what a release makes.
	tmpl, err := os.ReadFile(filepath.Join(repoRoot, "hack", "dist", "krew-manifest.tmpl.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := dist.RenderManifest(tmpl, p.Spec.Version, artifacts)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rendered, raw) {
		t.Errorf("krew-manifest.yaml is not the template rendered for %s: run `make dist VERSION=%[1]s` and copy dist/krew-manifest.yaml", p.Spec.Version)
	}

	// What users read before installing: what it checks, and the RBAC each command needs.
	for _, want := range []string{"PreparingNormal", "expectations", "Terminating", "resizePolicy", "finalizer"} {
		if !strings.Contains(p.Spec.Description, want) {
			t.Errorf("spec.description does not mention %q", want)
		}
	}
	for _, want := range []string{"scan:", "get, list, watch", "fix:", "patch", "pods/eviction", "deploy/rbac", "kubectl_complete-workloaddoctor"} {
		if !strings.Contains(p.Spec.Caveats, want) {
			t.Errorf("spec.caveats do not mention %q", want)
		}
	}
}

// TestDistRelease checks the release `make dist` left in dist/, if there is one: SHA256SUMS agrees
// with the archives, the manifest validates, and every archive installs with it the way krew
// would install it. The release code itself is tested on fresh archives in internal/dist.
func TestDistRelease(t *testing.T) {
	dir := filepath.Join(repoRoot, "dist")
	manifest, err := os.ReadFile(filepath.Join(dir, dist.ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("no release in dist/: `make dist VERSION=vX.Y.Z` makes one")
	}
	if err != nil {
		t.Fatal(err)
	}
	p, err := krewmanifest.Parse(manifest)
	if err != nil {
		t.Fatal(err)
	}

	f, err := os.Open(filepath.Join(dir, dist.ChecksumsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("%s: line %q is not `SHA256  NAME`", dist.ChecksumsFile, sc.Text())
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := sum(data); got != want {
			t.Errorf("%s: sha256 %s, %s says %s", name, got, dist.ChecksumsFile, want)
		}
		listed[name] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, pl := range p.Spec.Platforms {
		if name := filepath.Base(pl.URI); !listed[name] {
			t.Errorf("%s is in the manifest but not in %s", name, dist.ChecksumsFile)
		}
	}

	if err := dist.VerifyRelease(dir, manifest, t.TempDir()); err != nil {
		t.Fatal(err)
	}
}
