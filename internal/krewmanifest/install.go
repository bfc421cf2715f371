package krewmanifest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Install does with archive what `kubectl krew install` does for platform p, without krew or a
// download: it checks the archive's sha256 against p.Sha256, extracts it (tar.gz or zip, told
// apart by content as krew does), applies p.Files into installDir (which must be empty or absent),
// and checks that p.Bin and a license file are installed, as krew's validate-krew-manifest does.
// It returns the installed files, slash-separated and relative to installDir, sorted.
func Install(p Platform, archive []byte, installDir string) ([]string, error) {
	sum := sha256.Sum256(archive)
	if got := hex.EncodeToString(sum[:]); got != p.Sha256 {
		return nil, fmt.Errorf("archive sha256 is %s, manifest says %s", got, p.Sha256)
	}

	staging, err := os.MkdirTemp("", "krewmanifest-extract-")
	if err != nil {
		return nil, fmt.Errorf("create staging directory: %w", err)
	}
	defer os.RemoveAll(staging)
	if err := extract(archive, staging); err != nil {
		return nil, err
	}

	if err := os.MkdirAll(installDir, 0o755); err != nil {
		return nil, fmt.Errorf("create installation directory: %w", err)
	}
	if entries, err := os.ReadDir(installDir); err != nil {
		return nil, fmt.Errorf("read installation directory: %w", err)
	} else if len(entries) > 0 {
		return nil, fmt.Errorf("installation directory %s is not empty", installDir)
	}

	ops := p.Files
	if ops == nil { // krew's default: the whole archive
		ops = []FileOperation{{From: "*", To: "."}}
	}
	for i, op := range ops {
		if err := applyFileOp(staging, installDir, op); err != nil {
			return nil, fmt.Errorf("files[%d] (from %q to %q): %w", i, op.From, op.To, err)
		}
	}

	installed, err := listFiles(installDir)
	if err != nil {
		return nil, err
	}
	binPath := filepath.Join(installDir, filepath.FromSlash(p.Bin))
	if !isSubPath(installDir, binPath) {
		return installed, fmt.Errorf("bin %q is outside the installation directory", p.Bin)
	}
	fi, err := os.Stat(binPath)
	if err != nil {
		return installed, fmt.Errorf("bin %q is not installed (installed: %s): %w", p.Bin, strings.Join(installed, ", "), err)
	}
	if !fi.Mode().IsRegular() {
		return installed, fmt.Errorf("bin %q is not a regular file", p.Bin)
	}
	if p.Selector != nil && p.Selector.MatchLabels["os"] != "windows" && fi.Mode().Perm()&0o111 == 0 {
		return installed, fmt.Errorf("bin %q is not executable (mode %s)", p.Bin, fi.Mode())
	}
	hasLicense := false
	for _, f := range installed {
		hasLicense = hasLicense || isLicenseFile(f)
	}
	if !hasLicense {
		return installed, fmt.Errorf("no LICENSE (or alike) file is installed (installed: %s)", strings.Join(installed, ", "))
	}
	return installed, nil
}

func extract(archive []byte, dir string) error {
	// http.DetectContentType looks at the first 512 bytes, as krew's downloader does.
	switch mime, _, _ := strings.Cut(http.DetectContentType(archive), ";"); mime {
	case "application/x-gzip":
		return extractTarGz(archive, dir)
	case "application/zip":
		return extractZip(archive, dir)
	default:
		return fmt.Errorf("archive has content type %q: krew installs only tar.gz and zip", mime)
	}
}

// checkEntryName refuses entry names krew refuses: any "..", and absolute paths.
func checkEntryName(name string) error {
	if strings.Contains(name, "..") {
		return fmt.Errorf("archive entry %q contains \"..\"", name)
	}
	if strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) {
		return fmt.Errorf("archive entry %q is an absolute path", name)
	}
	return nil
}

func extractTarGz(archive []byte, dir string) error {
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return fmt.Errorf("read gzip: %w", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		if hdr.Name == "pax_global_header" {
			continue
		}
		if err := checkEntryName(hdr.Name); err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, fs.FileMode(hdr.Mode).Perm()|0o700); err != nil {
				return fmt.Errorf("extract %q: %w", hdr.Name, err)
			}
		case tar.TypeReg:
			if err := writeFile(dst, tr, fs.FileMode(hdr.Mode).Perm()); err != nil {
				return fmt.Errorf("extract %q: %w", hdr.Name, err)
			}
		default:
			return fmt.Errorf("archive entry %q has tar type %q, krew extracts only files and directories", hdr.Name, hdr.Typeflag)
		}
	}
}

func extractZip(archive []byte, dir string) error {
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		return fmt.Errorf("read zip: %w", err)
	}
	for _, f := range zr.File {
		if err := checkEntryName(f.Name); err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(f.Name))
		if f.FileInfo().IsDir() {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return fmt.Errorf("extract %q: %w", f.Name, err)
			}
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return fmt.Errorf("extract %q: %w", f.Name, err)
		}
		err = writeFile(dst, rc, f.Mode().Perm())
		rc.Close()
		if err != nil {
			return fmt.Errorf("extract %q: %w", f.Name, err)
		}
	}
	return nil
}

func writeFile(dst string, r io.Reader, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// applyFileOp moves files the way krew does: From names one file or directory directly (To "."
// keeps its name), or else is a glob whose matches go into the directory To.
func applyFileOp(fromDir, toDir string, op FileOperation) error {
	if op.To != filepath.Clean(op.To) {
		return fmt.Errorf("to %q is not a clean path (want %q)", op.To, filepath.Clean(op.To))
	}
	direct := filepath.Clean(filepath.Join(fromDir, filepath.FromSlash(op.From)))
	if _, err := os.Stat(direct); err == nil {
		to := op.To
		if to == "." {
			to = filepath.Base(direct)
		}
		return move(fromDir, toDir, direct, filepath.Join(toDir, filepath.FromSlash(to)))
	}
	matches, err := filepath.Glob(filepath.Join(fromDir, filepath.FromSlash(op.From)))
	if err != nil {
		return fmt.Errorf("bad glob: %w", err)
	}
	if len(matches) == 0 {
		return errors.New("no file in the archive matches")
	}
	newDir := filepath.Join(toDir, filepath.FromSlash(op.To))
	for _, m := range matches {
		if err := move(fromDir, toDir, m, filepath.Join(newDir, filepath.Base(m))); err != nil {
			return err
		}
	}
	return nil
}

func move(fromDir, toDir, from, to string) error {
	if !isSubPath(fromDir, from) || !isSubPath(toDir, to) {
		return fmt.Errorf("moving %q to %q leaves the archive or the installation directory", from, to)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.Rename(from, to)
}

func isSubPath(base, p string) bool {
	rel, err := filepath.Rel(base, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func listFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list installed files: %w", err)
	}
	sort.Strings(files)
	return files, nil
}
