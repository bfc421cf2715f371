// Package dist builds the release: the plugin cross-compiled for every platform, one archive per
// platform, a SHA256SUMS file and the krew manifest rendered from its template. `make dist` runs
// it through hack/dist; the tests run the same code on a host build.
//
// The archives are reproducible: entries are sorted, owned by 0:0 and stamped with the build date
// the binaries carry, and gzip carries no name or time, so one commit gives the same checksums.
package dist

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/krewmanifest"
)

// Names of the plugin and what it is built from.
const (
	PluginName     = "workloaddoctor"
	BinaryName     = "kubectl-workloaddoctor"
	MainPackage    = "./cmd/kubectl-workloaddoctor"
	VersionPackage = "github.com/workloaddoctor/kubectl-workloaddoctor/pkg/version"
	ChecksumsFile  = "SHA256SUMS"
	ManifestFile   = "krew-manifest.yaml"
)

// Target is one platform the plugin is released for.
type Target struct{ OS, Arch string }

func (t Target) String() string { return t.OS + "/" + t.Arch }

// Bin is the executable's name on the target.
func (t Target) Bin() string { return krewmanifest.BinName(PluginName, t.OS) }

// Archive is the name of the target's release archive for version: a zip on Windows, where
// users expect one, a tar.gz elsewhere.
func (t Target) Archive(version string) string {
	ext := ".tar.gz"
	if t.OS == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("%s_%s_%s_%s%s", BinaryName, version, t.OS, t.Arch, ext)
}

// Targets returns the platforms a release covers.
func Targets() []Target {
	return []Target{
		{"linux", "amd64"}, {"linux", "arm64"},
		{"darwin", "amd64"}, {"darwin", "arm64"},
		{"windows", "amd64"},
	}
}

// Stamp is the build information the linker writes into pkg/version.
type Stamp struct {
	Version string // semver with a leading v, as krew requires
	Commit  string
	Date    string // RFC 3339; also the archives' entry time
}

var commitRE = regexp.MustCompile(`^[0-9A-Za-z._-]+$`)

// Validate checks the stamp can go into -ldflags and a krew manifest unquoted.
func (s Stamp) Validate() error {
	if _, err := krewmanifest.ParseVersion(s.Version); err != nil {
		return fmt.Errorf("release version: %w", err)
	}
	if !commitRE.MatchString(s.Commit) {
		return fmt.Errorf("commit %q: want letters, digits, '.', '_' or '-'", s.Commit)
	}
	if _, err := s.Time(); err != nil {
		return err
	}
	return nil
}

// Time is the build date.
func (s Stamp) Time() (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s.Date)
	if err != nil {
		return time.Time{}, fmt.Errorf("build date %q is not RFC 3339: %w", s.Date, err)
	}
	return t.UTC(), nil
}

// LDFlags are the linker flags that strip the binary and stamp it, the same variables `make build` sets.
func (s Stamp) LDFlags() string {
	return fmt.Sprintf("-s -w -X %[1]s.Version=%[2]s -X %[1]s.Commit=%[3]s -X %[1]s.Date=%[4]s",
		VersionPackage, s.Version, s.Commit, s.Date)
}

// BuildFunc writes the plugin binary for target to out.
type BuildFunc func(ctx context.Context, target Target, out string) error

// GoBuild returns a BuildFunc that cross-compiles MainPackage in moduleDir with the go command
// goTool: static (CGO_ENABLED=0), -trimpath, and stamped with s.
func GoBuild(goTool, moduleDir string, s Stamp) BuildFunc {
	return func(ctx context.Context, t Target, out string) error {
		cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-ldflags", s.LDFlags(), "-o", out, MainPackage)
		cmd.Dir = moduleDir
		cmd.Env = append(os.Environ(), "GOOS="+t.OS, "GOARCH="+t.Arch, "CGO_ENABLED=0")
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build for %s: %w\n%s", t, err, stderr.String())
		}
		return nil
	}
}

// Options describe one release.
type Options struct {
	Stamp   Stamp
	Targets []Target
	Build   BuildFunc
	// Files are the files every archive carries next to the binary, by path; each goes into the
	// archive under its base name.
	Files []string
	// Template is the krew manifest template (hack/dist/krew-manifest.tmpl.yaml).
	Template []byte
	// OutDir receives the archives, SHA256SUMS and krew-manifest.yaml. Earlier release files
	// there are removed first; nothing else in it is touched.
	OutDir string
}

// Artifact is one packed archive.
type Artifact struct {
	Target Target
	Name   string // file name in OutDir
	SHA256 string
}

// Result is what Release wrote.
type Result struct {
	Artifacts []Artifact
	Checksums string // path of SHA256SUMS
	Manifest  string // path of krew-manifest.yaml
}

// Release builds, packs and describes every target, then validates the manifest it rendered
// and installs every archive with it the way krew would.
func Release(ctx context.Context, o Options) (Result, error) {
	if err := o.Stamp.Validate(); err != nil {
		return Result{}, err
	}
	mtime, _ := o.Stamp.Time()
	if len(o.Targets) == 0 {
		return Result{}, errors.New("no targets")
	}
	extra, err := readFiles(o.Files)
	if err != nil {
		return Result{}, err
	}
	if err := cleanOutDir(o.OutDir); err != nil {
		return Result{}, err
	}
	work, err := os.MkdirTemp("", "workloaddoctor-dist-")
	if err != nil {
		return Result{}, fmt.Errorf("create build directory: %w", err)
	}
	defer os.RemoveAll(work)

	var res Result
	for _, t := range o.Targets {
		binPath := filepath.Join(work, t.OS+"_"+t.Arch, t.Bin())
		if err := o.Build(ctx, t, binPath); err != nil {
			return Result{}, err
		}
		bin, err := os.ReadFile(binPath)
		if err != nil {
			return Result{}, fmt.Errorf("read built binary: %w", err)
		}
		entries := append([]Entry{{Name: t.Bin(), Data: bin, Mode: 0o755}}, extra...)
		var archive []byte
		if t.OS == "windows" {
			archive, err = Zip(entries, mtime)
		} else {
			archive, err = TarGz(entries, mtime)
		}
		if err != nil {
			return Result{}, fmt.Errorf("pack %s: %w", t, err)
		}
		a := Artifact{Target: t, Name: t.Archive(o.Stamp.Version), SHA256: sha256Hex(archive)}
		if err := os.WriteFile(filepath.Join(o.OutDir, a.Name), archive, 0o644); err != nil {
			return Result{}, fmt.Errorf("write archive: %w", err)
		}
		res.Artifacts = append(res.Artifacts, a)
	}

	res.Checksums = filepath.Join(o.OutDir, ChecksumsFile)
	if err := os.WriteFile(res.Checksums, Checksums(res.Artifacts), 0o644); err != nil {
		return Result{}, fmt.Errorf("write checksums: %w", err)
	}
	manifest, err := RenderManifest(o.Template, o.Stamp.Version, res.Artifacts)
	if err != nil {
		return Result{}, err
	}
	res.Manifest = filepath.Join(o.OutDir, ManifestFile)
	if err := os.WriteFile(res.Manifest, manifest, 0o644); err != nil {
		return Result{}, fmt.Errorf("write krew manifest: %w", err)
	}
	if err := VerifyRelease(o.OutDir, manifest, work); err != nil {
		return Result{}, fmt.Errorf("the release in %s does not pass validation: %w", o.OutDir, err)
	}
	return res, nil
}

// VerifyRelease validates a rendered manifest and installs each of its platforms from the archive
// of the same name in dir, the way krew would; scratch receives the installations.
func VerifyRelease(dir string, manifest []byte, scratch string) error {
	p, err := krewmanifest.Parse(manifest)
	if err != nil {
		return err
	}
	if err := krewmanifest.Validate(PluginName, p); err != nil {
		return err
	}
	for i, pl := range p.Spec.Platforms {
		name := pl.URI[strings.LastIndex(pl.URI, "/")+1:]
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("spec.platforms[%d]: archive for uri %s: %w", i, pl.URI, err)
		}
		if _, err := krewmanifest.Install(pl, data, filepath.Join(scratch, "install", fmt.Sprint(i))); err != nil {
			return fmt.Errorf("spec.platforms[%d] (%s): %w", i, name, err)
		}
	}
	return nil
}

func readFiles(paths []string) ([]Entry, error) {
	var out []Entry
	seen := map[string]bool{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("release file: %w", err)
		}
		name := filepath.Base(p)
		if seen[name] {
			return nil, fmt.Errorf("release files: two files named %s", name)
		}
		seen[name] = true
		out = append(out, Entry{Name: name, Data: data, Mode: 0o644})
	}
	return out, nil
}

// cleanOutDir creates dir and removes the files an earlier release left there, so the directory
// never mixes two versions' archives; it removes nothing else.
func cleanOutDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read output directory: %w", err)
	}
	for _, e := range entries {
		n := e.Name()
		if e.Type().IsRegular() && (n == ChecksumsFile || n == ManifestFile || strings.HasPrefix(n, BinaryName+"_")) {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return fmt.Errorf("remove old release file: %w", err)
			}
		}
	}
	return nil
}

// Checksums renders a SHA256SUMS file in the format `sha256sum -c` reads, sorted by name.
func Checksums(artifacts []Artifact) []byte {
	sorted := append([]Artifact(nil), artifacts...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var b bytes.Buffer
	for _, a := range sorted {
		fmt.Fprintf(&b, "%s  %s\n", a.SHA256, a.Name)
	}
	return b.Bytes()
}

// ManifestData is what the krew manifest template sees.
type ManifestData struct {
	Version   string
	Platforms []ManifestPlatform
}

// ManifestPlatform is one platform of the manifest.
type ManifestPlatform struct {
	OS, Arch string
	Archive  string // file name; the template puts it behind the release download URL
	SHA256   string
	Bin      string
}

// RenderManifest fills the krew manifest template for version and the artifacts, in the order given.
func RenderManifest(tmpl []byte, version string, artifacts []Artifact) ([]byte, error) {
	t, err := template.New("krew-manifest").Option("missingkey=error").Parse(string(tmpl))
	if err != nil {
		return nil, fmt.Errorf("parse krew manifest template: %w", err)
	}
	data := ManifestData{Version: version}
	for _, a := range artifacts {
		data.Platforms = append(data.Platforms, ManifestPlatform{OS: a.Target.OS, Arch: a.Target.Arch,
			Archive: a.Name, SHA256: a.SHA256, Bin: a.Target.Bin()})
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("render krew manifest: %w", err)
	}
	return b.Bytes(), nil
}
