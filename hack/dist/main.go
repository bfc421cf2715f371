// Command dist builds a release of kubectl-workloaddoctor into an output directory: one archive per
// platform (binary, LICENSE, README.md), SHA256SUMS, and krew-manifest.yaml rendered from
// hack/dist/krew-manifest.tmpl.yaml. It then validates the manifest and installs every archive
// with it the way krew would, and fails if any of that does not hold. Run it from the module root:
//
//	make dist VERSION=v0.1.0
//	go run ./hack/dist -version v0.1.0 -commit abc1234 -date 2026-01-02T03:04:05Z
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/dist"
)

type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	var (
		stamp    dist.Stamp
		files    fileList
		out      = flag.String("out", "dist", "output directory")
		tmpl     = flag.String("template", filepath.Join("hack", "dist", "krew-manifest.tmpl.yaml"), "krew manifest template")
		goTool   = flag.String("go", "go", "go command used to cross-compile")
		platform = flag.String("platforms", "", "comma-separated os/arch list (default: every release platform)")
	)
	flag.StringVar(&stamp.Version, "version", "", "release version, semver with a leading v (required)")
	flag.StringVar(&stamp.Commit, "commit", "unknown", "commit stamped into the binaries")
	flag.StringVar(&stamp.Date, "date", "", "build date stamped into the binaries and archives, RFC 3339 (required)")
	flag.Var(&files, "file", "file every archive carries next to the binary (repeatable; default LICENSE and README.md)")
	flag.Parse()
	if len(files) == 0 {
		files = fileList{"LICENSE", "README.md"}
	}

	targets := dist.Targets()
	if *platform != "" {
		targets = nil
		for _, p := range strings.Split(*platform, ",") {
			osName, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
			if !ok || osName == "" || arch == "" {
				fatalf("-platforms: %q is not os/arch", p)
			}
			targets = append(targets, dist.Target{OS: osName, Arch: arch})
		}
	}
	template, err := os.ReadFile(*tmpl)
	if err != nil {
		fatalf("%v", err)
	}
	moduleDir, err := os.Getwd()
	if err != nil {
		fatalf("%v", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := dist.Release(ctx, dist.Options{
		Stamp:    stamp,
		Targets:  targets,
		Build:    dist.GoBuild(*goTool, moduleDir, stamp),
		Files:    files,
		Template: template,
		OutDir:   *out,
	})
	if err != nil {
		fatalf("%v", err)
	}
	for _, a := range res.Artifacts {
		fmt.Printf("%s  %s\n", a.SHA256, filepath.Join(*out, a.Name))
	}
	fmt.Printf("wrote %s and %s; the manifest validates and every archive installs\n", res.Checksums, res.Manifest)
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "dist: "+format+"\n", args...)
	os.Exit(1)
}
