package testcluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ModulePath is the plugin's module; RepoRoot looks for the go.mod that declares it.
const ModulePath = "github.com/workloaddoctor/kubectl-workloaddoctor"

// ToolsDirEnv overrides where the Kubernetes binaries are looked up.
const ToolsDirEnv = "WORKLOADDOCTOR_TOOLS_DIR"

// RepoRoot walks up from the working directory to the directory whose go.mod declares ModulePath.
// Nested modules (hack/tools) declare other paths and are skipped.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repo root: %w", err)
	}
	for {
		mod, err := modulePath(filepath.Join(dir, "go.mod"))
		if err == nil && mod == ModulePath {
			return dir, nil
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("find repo root: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("find repo root: no go.mod with module %s above the working directory", ModulePath)
		}
		dir = parent
	}
}

// modulePath returns the module line of a go.mod file.
func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", sc.Err()
}

// ToolsDir is $WORKLOADDOCTOR_TOOLS_DIR, or <repo root>/bin/tools where `make tools` puts the binaries.
func ToolsDir() (string, error) {
	if dir := os.Getenv(ToolsDirEnv); dir != "" {
		return filepath.Abs(dir)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin", "tools"), nil
}

// CommandPATH is $PATH with <repo root>/bin (where `make build` puts the plugin) and ToolsDir
// (kubectl) in front, so `kubectl workloaddoctor` runs the plugin built from this tree.
func CommandPATH() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	tools, err := ToolsDir()
	if err != nil {
		return "", err
	}
	return strings.Join([]string{filepath.Join(root, "bin"), tools, os.Getenv("PATH")}, string(os.PathListSeparator)), nil
}

// Binary returns the path of a tool in ToolsDir, failing the test with a hint when it is missing.
func Binary(t testing.TB, name string) string {
	t.Helper()
	path, err := LookupBinary(name)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// LookupBinary is Binary for callers outside a test: the path of a tool in ToolsDir, or an error
// with a hint when it is missing.
func LookupBinary(name string) (string, error) {
	dir, err := ToolsDir()
	if err != nil {
		return "", fmt.Errorf("locate %s: %w", name, err)
	}
	path := filepath.Join(dir, name)
	return path, checkExecutable(path)
}

func requireExecutable(t testing.TB, path string) string {
	t.Helper()
	if err := checkExecutable(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("binary %s is missing or not executable: run `make tools` in the repo root (or set %s)", path, ToolsDirEnv)
	}
	return nil
}
