package bundle

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing/fstest"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle/source"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Write writes a bundle to dest: a gzip'd tar, or the same files unpacked when dest ends in a
// slash or is an existing directory. An existing file is never overwritten; the archive is
// written to a temporary file beside it and renamed, so a failed capture leaves nothing half
// written.
func Write(dest string, m *Manifest, rep *report.Report, rec *Recorder) error {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	m.APIVersion, m.Kind = APIVersion, ManifestKind
	m.Requests, m.Bytes = rec.count, rec.bytes
	files, err := bundleFiles(m, rep, rec.index, rec.bodies)
	if err != nil {
		return err
	}
	if info, err := os.Stat(dest); strings.HasSuffix(dest, "/") || err == nil && info.IsDir() {
		return writeDir(dest, files)
	} else if err == nil {
		return fmt.Errorf("%s exists: choose another name, a capture never overwrites a file", dest)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".*")
	if err != nil {
		return fmt.Errorf("create the bundle: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename there is nothing left to remove
	if err := writeTar(tmp, files); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", dest, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", dest, err)
	}
	// Link, not rename: a rename would replace a file created at dest meanwhile.
	if err := os.Link(tmp.Name(), dest); err != nil {
		return fmt.Errorf("write %s: %w", dest, err)
	}
	return nil
}

// bundleFiles lays the bundle out: name -> content, in the order written.
func bundleFiles(m *Manifest, rep *report.Report, index Index, bodies map[string][]byte) ([]file, error) {
	man, err := yaml.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", ManifestFile, err)
	}
	rj, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", ReportFile, err)
	}
	ij, err := json.MarshalIndent(index, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", IndexFile, err)
	}
	files := []file{{ManifestFile, man}, {ReportFile, append(rj, '\n')}, {IndexFile, append(ij, '\n')}}
	names := make([]string, 0, len(bodies))
	for n := range bodies {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		files = append(files, file{ResponsesDir + "/" + n, bodies[n]})
	}
	return files, nil
}

type file struct {
	name string
	data []byte
}

func writeTar(w io.Writer, files []file) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	now := time.Now()
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: now, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// writeDir writes the unpacked layout into dir, which must hold no bundle yet.
func writeDir(dir string, files []file) error {
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
		return fmt.Errorf("%s already holds a bundle: choose another directory, a capture never overwrites one", dir)
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("write the bundle: %w", err)
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return fmt.Errorf("write the bundle: %w", err)
		}
	}
	return nil
}

// Bundle is an opened capture: the Source a scan reads and, for the tool's own bundles, the
// plan the capture followed and the report it made.
type Bundle struct {
	Source *source.Source
	// Manifest, Report and Index are nil for a foreign capture (a support bundle, kubectl lists).
	Manifest *Manifest
	Report   *report.Report
	Index    Index
	fsys     fs.FS
}

// Open opens the bundle at p: an archive (.tgz, .tar.gz) or a directory. A capture's own
// bundle has bundle.yaml at its root; anything else is tried as a foreign capture.
func Open(p string) (*Bundle, error) {
	fsys, err := openFS(p)
	if err != nil {
		return nil, err
	}
	raw, err := fs.ReadFile(fsys, ManifestFile)
	if errors.Is(err, fs.ErrNotExist) {
		src, ferr := openForeign(fsys)
		if ferr != nil {
			return nil, fmt.Errorf("open %s: %w", p, ferr)
		}
		return &Bundle{Source: src, fsys: fsys}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	b := &Bundle{Manifest: &Manifest{}, fsys: fsys}
	if err := yaml.UnmarshalStrict(raw, b.Manifest); err != nil {
		return nil, fmt.Errorf("open %s: %s: %w", p, ManifestFile, err)
	}
	if b.Manifest.APIVersion != APIVersion || b.Manifest.Kind != ManifestKind {
		return nil, fmt.Errorf("open %s: %s is %s %s, not a %s %s", p, ManifestFile, b.Manifest.APIVersion, b.Manifest.Kind, APIVersion, ManifestKind)
	}
	if err := readJSON(fsys, IndexFile, &b.Index); err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	b.Report = &report.Report{}
	if err := readJSON(fsys, ReportFile, b.Report); err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	m := b.Manifest
	b.Source = &source.Source{
		Format: source.FormatBundle, CapturedAt: m.CapturedAt,
		ServerVersion: m.ServerVersion, ClusterID: m.ClusterID, Context: m.Context,
		Transport: NewReplayer(b.Index, b.body),
	}
	return b, nil
}

// Address is the server address a client replaying a bundle is given: its requests never
// leave the process (Source.Transport answers them).
func Address() string { return replayAddress }

func (b *Bundle) body(name string) ([]byte, error) {
	return fs.ReadFile(b.fsys, path.Join(ResponsesDir, name))
}

func readJSON(fsys fs.FS, name string, into any) error {
	raw, err := fs.ReadFile(fsys, name)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("decode %s: %w", name, err)
	}
	return nil
}

// maxArchiveBytes bounds what an archive may unpack to in memory: a bundle of a 100k-pod
// cluster is well below it, a tar bomb is not.
const maxArchiveBytes = 8 << 30

// openFS opens a directory as it is, and reads a gzip'd tar (or a plain tar) into memory.
func openFS(p string) (fs.FS, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("open bundle: %w", err)
	}
	if info.IsDir() {
		return os.DirFS(p), nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("open bundle: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if gz, err := gzip.NewReader(f); err == nil {
		defer gz.Close()
		r = gz
	} else if _, serr := f.Seek(0, io.SeekStart); serr != nil {
		return nil, fmt.Errorf("open bundle %s: %w", p, serr)
	}
	mem := fstest.MapFS{}
	tr := tar.NewReader(r)
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("open %s: not a bundle (a directory or a .tgz archive): %w", p, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		total += h.Size
		if total > maxArchiveBytes {
			return nil, fmt.Errorf("open %s: the archive unpacks to more than %d bytes", p, int64(maxArchiveBytes))
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", p, err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if !fs.ValidPath(name) {
			continue
		}
		mem[name] = &fstest.MapFile{Data: data, Mode: 0o644, ModTime: h.ModTime}
	}
	return mem, nil
}
