package bundle

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle/source"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Write writes the bundle of the recorded answers to the dest given to NewRecorder: a gzip'd
// tar, or the same files unpacked into the directory. The bodies are streamed from their files
// into the archive, or moved into the directory. An existing file is never overwritten, and a
// failed Write leaves nothing half written: the archive is made in the temporary directory and
// put in place at the end, the unpacked files written are removed again.
func (r *Recorder) Write(m *Manifest, rep *report.Report) error {
	return r.write(m, rep, os.Link)
}

// write is Write with the hard link made by link, which a test replaces to stand for a
// filesystem without hard links.
func (r *Recorder) write(m *Manifest, rep *report.Report, link func(oldname, newname string) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	if r.written {
		return fmt.Errorf("the bundle was written to %s already", r.dest.path)
	}
	m.APIVersion, m.Kind = APIVersion, ManifestKind
	m.Requests, m.Bytes = len(r.sizes), r.bytes
	head, err := bundleHead(m, rep, r.index)
	if err != nil {
		return err
	}
	bodies := slices.Sorted(maps.Keys(r.sizes))
	if r.dest.dir {
		err = r.writeDir(head, bodies, link)
	} else {
		err = r.writeArchive(head, bodies, link)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", r.dest.path, err)
	}
	r.written = true
	return nil
}

// bundleHead is what a bundle holds besides the bodies, in the order written.
func bundleHead(m *Manifest, rep *report.Report, index Index) ([]file, error) {
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
	return []file{{ManifestFile, man}, {ReportFile, append(rj, '\n')}, {IndexFile, append(ij, '\n')}}, nil
}

type file struct {
	name string
	data []byte
}

// writeArchive writes the archive beside the bodies and puts it at dest.
func (r *Recorder) writeArchive(head []file, bodies []string, link func(string, string) error) error {
	tmp := filepath.Join(r.dir, "bundle.tgz") // the bodies are numbered: no clash
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := r.writeTar(f, head, bodies); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return place(tmp, r.dest.path, link)
}

func (r *Recorder) writeTar(w io.Writer, head []file, bodies []string) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	now := time.Now()
	hdr := func(name string, size int64) *tar.Header {
		return &tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: now, Typeflag: tar.TypeReg}
	}
	for _, f := range head {
		if err := tw.WriteHeader(hdr(f.name, int64(len(f.data)))); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	for _, name := range bodies {
		if err := tw.WriteHeader(hdr(ResponsesDir+"/"+name, r.sizes[name])); err != nil {
			return err
		}
		if err := copyFile(tw, filepath.Join(r.dir, name)); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func copyFile(w io.Writer, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// writeDir writes the unpacked layout into the directory, bundle.yaml first: of two captures
// into one directory, the second fails there. On a failure the files written are removed.
func (r *Recorder) writeDir(head []file, bodies []string, link func(string, string) error) (err error) {
	var made []string
	defer func() {
		if err != nil {
			for _, p := range slices.Backward(made) {
				os.Remove(p)
			}
		}
	}()
	responses := filepath.Join(r.dest.path, ResponsesDir)
	for _, f := range head {
		p := filepath.Join(r.dest.path, filepath.FromSlash(f.name))
		if f.name == IndexFile {
			if err := os.Mkdir(responses, 0o755); err == nil {
				made = append(made, responses)
			} else if !errors.Is(err, fs.ErrExist) {
				return err
			}
		}
		if err := createExclusive(p, 0o644, func(w io.Writer) error { _, err := w.Write(f.data); return err }); err != nil {
			return err
		}
		made = append(made, p)
	}
	for _, name := range bodies {
		src, dst := filepath.Join(r.dir, name), filepath.Join(responses, name)
		if err := place(src, dst, link); err != nil {
			return err
		}
		made = append(made, dst)
		os.Remove(src) // moved: the disk holds each body once
	}
	return nil
}

// place puts the file src at dst, never replacing a file there. A rename would replace one; a
// hard link fails on it. Where the filesystem has no hard links (link fails with EXDEV, EPERM,
// ENOTSUP...), dst is created exclusively and src copied into it.
func place(src, dst string, link func(oldname, newname string) error) error {
	err := link(src, dst)
	if err == nil || !noHardLink(err) {
		return err
	}
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	return createExclusive(dst, info.Mode().Perm(), func(w io.Writer) error { return copyFile(w, src) })
}

// noHardLink says a link failed because the filesystem cannot make one there, not because of
// what is at the destination.
func noHardLink(err error) bool {
	for _, e := range []error{syscall.EXDEV, syscall.EPERM, syscall.ENOTSUP, syscall.EOPNOTSUPP, syscall.EMLINK, syscall.ENOSYS} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// createExclusive creates the file p, which must not exist, and fills it with write; a failure
// removes what it created.
func createExclusive(p string, perm fs.FileMode, write func(io.Writer) error) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(p)
		return err
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
	// unpacked is the temporary directory an archive was unpacked into ("" for a directory).
	unpacked string
}

// Close removes what opening an archive unpacked. The Bundle is not to be read after it.
func (b *Bundle) Close() error {
	if b == nil || b.unpacked == "" {
		return nil
	}
	if err := os.RemoveAll(b.unpacked); err != nil {
		return fmt.Errorf("remove unpacked bundle: %w", err)
	}
	b.unpacked = ""
	return nil
}

// Open opens the bundle at p: an archive (.tgz, .tar.gz) or a directory. A capture's own
// bundle has bundle.yaml at its root; anything else is tried as a foreign capture.
func Open(p string) (*Bundle, error) {
	fsys, unpacked, err := openFS(p)
	if err != nil {
		return nil, err
	}
	b, err := open(p, fsys)
	if err != nil {
		if unpacked != "" {
			os.RemoveAll(unpacked)
		}
		return nil, err
	}
	b.unpacked = unpacked
	return b, nil
}

func open(p string, fsys fs.FS) (*Bundle, error) {
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

func (b *Bundle) body(name string) (io.ReadCloser, error) {
	return b.fsys.Open(path.Join(ResponsesDir, name))
}

func (b *Bundle) bodyBytes(name string) ([]byte, error) {
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

// maxArchiveBytes bounds what an archive may unpack to: a bundle of a 100k-pod cluster is well
// below it, a tar bomb is not.
const maxArchiveBytes = 8 << 30

// openFS opens a directory as it is, and unpacks a gzip'd tar (or a plain tar) into a temporary
// directory, returned as unpacked for the caller to remove: the answers of a large cluster (its
// pod list alone is hundreds of MB of JSON) are then read from disk as a scan asks for them,
// never all held in memory.
func openFS(p string) (fsys fs.FS, unpacked string, err error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, "", fmt.Errorf("open bundle: %w", err)
	}
	if info.IsDir() {
		return os.DirFS(p), "", nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, "", fmt.Errorf("open bundle: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if gz, err := gzip.NewReader(f); err == nil {
		defer gz.Close()
		r = gz
	} else if _, serr := f.Seek(0, io.SeekStart); serr != nil {
		return nil, "", fmt.Errorf("open bundle %s: %w", p, serr)
	}
	dir, err := os.MkdirTemp("", "workloaddoctor-bundle-")
	if err != nil {
		return nil, "", fmt.Errorf("open bundle %s: %w", p, err)
	}
	if err := unpack(tar.NewReader(r), dir); err != nil {
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("open %s: %w", p, err)
	}
	return os.DirFS(dir), dir, nil
}

// unpack writes the regular files of tr below dir; names that would leave it are skipped, and a
// name archived twice keeps its last entry, as tar extracts it. dir is new and holds nothing but
// regular files written here, so a file is never reached through a link.
func unpack(tr *tar.Reader, dir string) error {
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not a bundle (a directory or a .tgz archive): %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		total += h.Size
		if total > maxArchiveBytes {
			return fmt.Errorf("the archive unpacks to more than %d bytes", int64(maxArchiveBytes))
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if !fs.ValidPath(name) {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, io.LimitReader(tr, h.Size))
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("unpack %s: %w", name, err)
		}
	}
}
