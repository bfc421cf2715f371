// Package version holds the plugin's build information, stamped by the linker (see the Makefile).
package version

import "runtime/debug"

// Set with -ldflags -X at build time.
var (
	Version = ""
	Commit  = ""
	Date    = ""
)

// Info describes this build of the plugin.
type Info struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	Date    string `json:"date,omitempty"`
}

// Get returns the stamped build information, falling back to the module version that
// `go install ...@version` records when the binary was not built by the Makefile.
func Get() Info {
	info := Info{Version: Version, Commit: Commit, Date: Date}
	if info.Version == "" {
		info.Version = "v0.0.0-dev"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
	}
	return info
}
