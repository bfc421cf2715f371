package cmd

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var updateReadme = flag.Bool("update", false, "rewrite the README's generated sections")

// TestReadmeInStep fails when the README's generated sections differ from the code.
// Run `go test ./pkg/cmd -run TestReadmeInStep -update` to regenerate them.
func TestReadmeInStep(t *testing.T) {
	path := filepath.Join("..", "..", "README.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	for name, want := range ReadmeSections() {
		re := regexp.MustCompile(`(?s)(<!-- BEGIN GENERATED: ` + regexp.QuoteMeta(name) + ` -->\n)(.*?)(<!-- END GENERATED: ` + regexp.QuoteMeta(name) + ` -->)`)
		m := re.FindStringSubmatch(text)
		if m == nil {
			t.Errorf("README has no generated section %q", name)
			continue
		}
		if m[2] != want {
			if *updateReadme {
				text = re.ReplaceAllLiteralString(text, m[1]+want+m[3])
				continue
			}
			t.Errorf("README section %q is out of date; run: go test ./pkg/cmd -run TestReadmeInStep -update", name)
		}
	}
	if *updateReadme {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
