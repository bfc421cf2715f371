// Package krewmanifest reads krew plugin manifests and validates them the way krew does before it
// accepts a plugin into an index (krew's internal/index/validation and cmd/validate-krew-manifest),
// plus the stricter rules this project holds its own manifest to. Install replays what
// `kubectl krew install` does with an archive, so a release can be checked without krew.
package krewmanifest

import (
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The only apiVersion and kind krew accepts.
const (
	APIVersion = "krew.googlecontainertools.github.com/v1alpha2"
	Kind       = "Plugin"
)

// Plugin is a krew plugin manifest.
type Plugin struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       Spec     `json:"spec"`
}

// Metadata is the part of the object metadata krew reads.
type Metadata struct {
	Name string `json:"name"`
}

// Spec describes the plugin and where to get it on each platform.
type Spec struct {
	Version          string     `json:"version,omitempty"`
	ShortDescription string     `json:"shortDescription,omitempty"`
	Description      string     `json:"description,omitempty"`
	Caveats          string     `json:"caveats,omitempty"`
	Homepage         string     `json:"homepage,omitempty"`
	Platforms        []Platform `json:"platforms,omitempty"`
}

// Platform is one archive and the os/arch pairs its selector matches.
type Platform struct {
	URI      string                `json:"uri,omitempty"`
	Sha256   string                `json:"sha256,omitempty"`
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Files is nil when the manifest leaves it out (krew then installs every file in the archive).
	Files []FileOperation `json:"files"`
	// Bin is the executable's path relative to the installation directory.
	Bin string `json:"bin"`
}

// FileOperation copies the archive files matching From (a path or glob) to To in the
// installation directory.
type FileOperation struct {
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// Parse decodes a manifest. Unknown fields are an error: krew ignores them, but in our own
// manifest they are typos that would silently drop a setting.
func Parse(data []byte) (Plugin, error) {
	var p Plugin
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return Plugin{}, fmt.Errorf("decode krew manifest: %w", err)
	}
	return p, nil
}

// ReadFile reads and decodes the manifest at path.
func ReadFile(path string) (Plugin, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Plugin{}, fmt.Errorf("read krew manifest: %w", err)
	}
	p, err := Parse(data)
	if err != nil {
		return Plugin{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
