package dist

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"time"
)

// Entry is one file of an archive, at its top level.
type Entry struct {
	Name string
	Data []byte
	Mode fs.FileMode
}

func sortedEntries(entries []Entry) ([]Entry, error) {
	out := append([]Entry(nil), entries...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, fmt.Errorf("two archive entries named %s", out[i].Name)
		}
	}
	return out, nil
}

// TarGz packs entries into a gzip-compressed tar, sorted by name, owned by 0:0, with mtime as
// every entry's time and no name or time in the gzip header, so equal input gives equal bytes.
func TarGz(entries []Entry, mtime time.Time) ([]byte, error) {
	entries, err := sortedEntries(entries)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     e.Name,
			Size:     int64(len(e.Data)),
			Mode:     int64(e.Mode.Perm()),
			ModTime:  mtime.UTC().Truncate(time.Second),
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("tar header for %s: %w", e.Name, err)
		}
		if _, err := tw.Write(e.Data); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close tar: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("close gzip: %w", err)
	}
	return buf.Bytes(), nil
}

// Zip packs entries into a deflated zip, sorted by name, with mtime as every entry's time.
func Zip(entries []Entry, mtime time.Time) ([]byte, error) {
	entries, err := sortedEntries(entries)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		hdr := &zip.FileHeader{Name: e.Name, Method: zip.Deflate, Modified: mtime.UTC().Truncate(time.Second)}
		hdr.SetMode(e.Mode.Perm())
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			return nil, fmt.Errorf("zip header for %s: %w", e.Name, err)
		}
		if _, err := w.Write(e.Data); err != nil {
			return nil, fmt.Errorf("zip %s: %w", e.Name, err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("close zip: %w", err)
	}
	return buf.Bytes(), nil
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
