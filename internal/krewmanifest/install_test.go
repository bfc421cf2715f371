package krewmanifest_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/dist"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/krewmanifest"
)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

var mtime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func entries(bin string) []dist.Entry {
	return []dist.Entry{
		{Name: bin, Data: []byte("#!/bin/sh\n"), Mode: 0o755},
		{Name: "LICENSE", Data: []byte("Apache License\n"), Mode: 0o644},
		{Name: "README.md", Data: []byte("# readme\n"), Mode: 0o644},
	}
}

func mustTarGz(t *testing.T, es []dist.Entry) []byte {
	t.Helper()
	b, err := dist.TarGz(es, mtime)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawTarGz writes entries exactly as given, for archives our packer would never produce.
func rawTarGz(t *testing.T, hdrs ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(make([]byte, h.Size)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func linuxPlatform(archive []byte) krewmanifest.Platform {
	return krewmanifest.Platform{
		URI:      "https://example.com/a.tar.gz",
		Sha256:   sum(archive),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"os": "linux", "arch": "amd64"}},
		Files:    []krewmanifest.FileOperation{{From: "kubectl-workloaddoctor", To: "."}, {From: "LICENSE", To: "."}},
		Bin:      "kubectl-workloaddoctor",
	}
}

func TestInstall(t *testing.T) {
	good := mustTarGz(t, entries("kubectl-workloaddoctor"))

	t.Run("tar.gz with files", func(t *testing.T) {
		got, err := krewmanifest.Install(linuxPlatform(good), good, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"LICENSE", "kubectl-workloaddoctor"}; !slices.Equal(got, want) {
			t.Errorf("installed %v, want %v", got, want)
		}
	})
	t.Run("zip for windows", func(t *testing.T) {
		zipped, err := dist.Zip(entries("kubectl-workloaddoctor.exe"), mtime)
		if err != nil {
			t.Fatal(err)
		}
		p := linuxPlatform(zipped)
		p.Selector.MatchLabels["os"] = "windows"
		p.Bin, p.Files[0].From = "kubectl-workloaddoctor.exe", "kubectl-workloaddoctor.exe"
		got, err := krewmanifest.Install(p, zipped, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"LICENSE", "kubectl-workloaddoctor.exe"}; !slices.Equal(got, want) {
			t.Errorf("installed %v, want %v", got, want)
		}
	})
	t.Run("no files installs the whole archive", func(t *testing.T) {
		p := linuxPlatform(good)
		p.Files = nil
		got, err := krewmanifest.Install(p, good, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"LICENSE", "README.md", "kubectl-workloaddoctor"}; !slices.Equal(got, want) {
			t.Errorf("installed %v, want %v", got, want)
		}
	})
	t.Run("globs and subdirectories", func(t *testing.T) {
		p := linuxPlatform(good)
		p.Files = []krewmanifest.FileOperation{{From: "kubectl-*", To: "bin"}, {From: "*.md", To: "doc"}, {From: "LICENSE", To: "doc/LICENSE.txt"}}
		p.Bin = "bin/kubectl-workloaddoctor"
		got, err := krewmanifest.Install(p, good, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"bin/kubectl-workloaddoctor", "doc/LICENSE.txt", "doc/README.md"}; !slices.Equal(got, want) {
			t.Errorf("installed %v, want %v", got, want)
		}
	})

	refused := []struct {
		name    string
		archive []byte
		mutate  func(p *krewmanifest.Platform)
		want    string
	}{
		{name: "sha256 mismatch", archive: good, mutate: func(p *krewmanifest.Platform) { p.Sha256 = strings.Repeat("0", 64) }, want: "manifest says"},
		{name: "not an archive", archive: []byte("#!/bin/sh\necho hi\n"), want: "krew installs only tar.gz and zip"},
		{name: "no license in archive", archive: mustTarGz(t, entries("kubectl-workloaddoctor")[:1]), mutate: func(p *krewmanifest.Platform) {
			p.Files = p.Files[:1]
		}, want: "no LICENSE"},
		{name: "license file op matches nothing", archive: mustTarGz(t, entries("kubectl-workloaddoctor")[:1]), want: "no file in the archive matches"},
		{name: "bin not in archive", archive: good, mutate: func(p *krewmanifest.Platform) {
			p.Bin, p.Files[0].From = "kubectl-doctor", "README.md"
		}, want: `bin "kubectl-doctor" is not installed`},
		{name: "bin not executable", archive: mustTarGz(t, []dist.Entry{{Name: "kubectl-workloaddoctor", Data: []byte("x"), Mode: 0o644}, entries("")[1]}), want: "not executable"},
		{name: "bin outside the installation", archive: good, mutate: func(p *krewmanifest.Platform) { p.Bin = "../kubectl-workloaddoctor" }, want: "outside the installation directory"},
		{name: "to not clean", archive: good, mutate: func(p *krewmanifest.Platform) { p.Files[1].To = "./" }, want: "not a clean path"},
		{name: "file op leaving the installation", archive: good, mutate: func(p *krewmanifest.Platform) { p.Files[1].To = "../LICENSE" }, want: "leaves the archive or the installation directory"},
		{name: "entry with ..", archive: rawTarGz(t, &tar.Header{Name: "../evil", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}), want: `contains ".."`},
		{name: "absolute entry", archive: rawTarGz(t, &tar.Header{Name: "/etc/evil", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}), want: "absolute path"},
		{name: "symlink entry", archive: rawTarGz(t, &tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}), want: "krew extracts only files and directories"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			p := linuxPlatform(tc.archive)
			if tc.mutate != nil {
				tc.mutate(&p)
			}
			_, err := krewmanifest.Install(p, tc.archive, filepath.Join(t.TempDir(), "install"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Install() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
