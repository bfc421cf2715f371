package krewmanifest

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/version"
)

// OSArch is a platform krew can install on.
type OSArch struct{ OS, Arch string }

func (p OSArch) String() string { return p.OS + "/" + p.Arch }

// SupportedPlatforms returns the os/arch pairs krew's manifest validator knows; every platform
// in a manifest has to match at least one of them.
func SupportedPlatforms() []OSArch {
	return []OSArch{
		{"windows", "386"}, {"windows", "amd64"}, {"windows", "arm64"},
		{"linux", "386"}, {"linux", "amd64"}, {"linux", "arm"}, {"linux", "arm64"}, {"linux", "ppc64le"},
		{"darwin", "386"}, {"darwin", "amd64"}, {"darwin", "arm64"},
	}
}

var (
	safeNameRE = regexp.MustCompile(`^[\w-]+$`)
	sha256RE   = regexp.MustCompile(`^[a-f0-9]{64}$`)
	// Device names Windows reserves: a plugin directory cannot carry them.
	windowsReserved = []string{"CON", "PRN", "AUX", "NUL",
		"COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8", "COM9",
		"LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9"}
)

// IsSafeName reports whether krew accepts name as a plugin name.
func IsSafeName(name string) bool {
	if !safeNameRE.MatchString(name) {
		return false
	}
	for _, r := range windowsReserved {
		if strings.EqualFold(r, name) {
			return false
		}
	}
	return true
}

// ParseVersion parses a plugin version the way krew does: semver with a leading "v".
func ParseVersion(s string) (*version.Version, error) {
	if !strings.HasPrefix(s, "v") {
		return nil, fmt.Errorf("version %q does not start with \"v\"", s)
	}
	v, err := version.ParseSemantic(s)
	if err != nil {
		return nil, fmt.Errorf("version %q: %w", s, err)
	}
	return v, nil
}

// ValidateKrew applies krew's own checks to a manifest that an index would store as NAME.yaml:
// the structural validation krew runs on every manifest it reads, then the checks of krew's
// validate-krew-manifest (each platform matches a supported os/arch, no os/arch is matched by two
// platforms). It stops at the first problem, as krew does.
func ValidateKrew(name string, p Plugin) error {
	if p.APIVersion != APIVersion {
		return fmt.Errorf("apiVersion is %q, krew supports only %q", p.APIVersion, APIVersion)
	}
	if p.Kind != Kind {
		return fmt.Errorf("kind is %q, krew supports only %q", p.Kind, Kind)
	}
	if !IsSafeName(name) {
		return fmt.Errorf("plugin name %q is not allowed: must match %s and not be a reserved Windows device name", name, safeNameRE)
	}
	if p.Metadata.Name != name {
		return fmt.Errorf("metadata.name is %q, the plugin is named %q", p.Metadata.Name, name)
	}
	if p.Spec.ShortDescription == "" {
		return errors.New("spec.shortDescription is empty")
	}
	if strings.ContainsAny(p.Spec.ShortDescription, "\r\n") {
		return errors.New("spec.shortDescription has a line break")
	}
	if len(p.Spec.Platforms) == 0 {
		return errors.New("spec.platforms is empty")
	}
	if p.Spec.Version == "" {
		return errors.New("spec.version is empty")
	}
	if _, err := ParseVersion(p.Spec.Version); err != nil {
		return fmt.Errorf("spec.version: %w", err)
	}
	for i, pl := range p.Spec.Platforms {
		if err := validatePlatform(pl); err != nil {
			return fmt.Errorf("spec.platforms[%d]: %w", i, err)
		}
	}
	for i, pl := range p.Spec.Platforms {
		if len(Matches(pl.Selector)) == 0 {
			return fmt.Errorf("spec.platforms[%d]: selector %s matches no supported os/arch", i, metav1.FormatLabelSelector(pl.Selector))
		}
	}
	for _, env := range SupportedPlatforms() {
		var idx []int
		for i, pl := range p.Spec.Platforms {
			if selectorMatches(pl.Selector, env) {
				idx = append(idx, i)
			}
		}
		if len(idx) > 1 {
			return fmt.Errorf("spec.platforms %v all select %s", idx, env)
		}
	}
	return nil
}

func validatePlatform(p Platform) error {
	if p.URI == "" {
		return errors.New("uri is empty")
	}
	if p.Sha256 == "" {
		return errors.New("sha256 is empty")
	}
	if !sha256RE.MatchString(p.Sha256) {
		return fmt.Errorf("sha256 %q is not 64 lowercase hex digits", p.Sha256)
	}
	if p.Bin == "" {
		return errors.New("bin is empty")
	}
	if p.Files != nil && len(p.Files) == 0 {
		return errors.New("files is empty: leave it out or list at least one file")
	}
	for i, op := range p.Files {
		if op.From == "" {
			return fmt.Errorf("files[%d].from is empty", i)
		}
		if op.To == "" {
			return fmt.Errorf("files[%d].to is empty", i)
		}
	}
	return validateSelector(p.Selector)
}

func validateSelector(sel *metav1.LabelSelector) error {
	if sel == nil {
		return errors.New("selector is missing")
	}
	if sel.MatchLabels == nil && len(sel.MatchExpressions) == 0 {
		return errors.New("selector is empty")
	}
	for k := range sel.MatchLabels {
		if k != "os" && k != "arch" {
			return fmt.Errorf("selector key %q is not supported: only os and arch", k)
		}
	}
	for _, e := range sel.MatchExpressions {
		if e.Key != "os" && e.Key != "arch" {
			return fmt.Errorf("selector key %q is not supported: only os and arch", e.Key)
		}
	}
	if sel.MatchLabels != nil && len(sel.MatchLabels) == 0 {
		return errors.New("selector.matchLabels is present but empty")
	}
	if sel.MatchExpressions != nil && len(sel.MatchExpressions) == 0 {
		return errors.New("selector.matchExpressions is present but empty")
	}
	return nil
}

// Matches returns the supported os/arch pairs that sel selects.
func Matches(sel *metav1.LabelSelector) []OSArch {
	var out []OSArch
	for _, env := range SupportedPlatforms() {
		if selectorMatches(sel, env) {
			out = append(out, env)
		}
	}
	return out
}

func selectorMatches(sel *metav1.LabelSelector, env OSArch) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	return s.Matches(labels.Set{"os": env.OS, "arch": env.Arch})
}

// Project limits that krew's validator does not enforce but krew-index reviewers ask for.
const (
	MaxShortDescription = 50
	MaxDescriptionWidth = 80
)

// ValidateProject checks what this project requires of its own manifest on top of krew's rules,
// and reports every problem it finds.
func ValidateProject(p Plugin) error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	s := p.Spec

	if n := utf8.RuneCountInString(s.ShortDescription); n > MaxShortDescription {
		add("spec.shortDescription has %d characters, at most %d", n, MaxShortDescription)
	}
	if !strings.HasPrefix(s.Homepage, "https://") {
		add("spec.homepage %q is not an https URL", s.Homepage)
	}
	if strings.TrimSpace(s.Description) == "" {
		add("spec.description is empty")
	}
	for i, line := range strings.Split(s.Description, "\n") {
		if n := utf8.RuneCountInString(line); n > MaxDescriptionWidth {
			add("spec.description line %d has %d characters, wrap at %d", i+1, n, MaxDescriptionWidth)
		}
		if looksLikeUsage(line) {
			add("spec.description line %d looks like a usage example (krew shows usage nowhere; link the README): %q", i+1, line)
		}
	}
	if strings.TrimSpace(s.Caveats) == "" {
		add("spec.caveats is empty: they have to say which RBAC permissions the plugin needs")
	}
	for i, line := range strings.Split(s.Caveats, "\n") {
		if n := utf8.RuneCountInString(line); n > MaxDescriptionWidth {
			add("spec.caveats line %d has %d characters, wrap at %d", i+1, n, MaxDescriptionWidth)
		}
	}

	seen := map[OSArch]bool{}
	for i, pl := range s.Platforms {
		env, err := exactPlatform(pl.Selector)
		if err != nil {
			add("spec.platforms[%d]: %v", i, err)
			continue
		}
		if seen[env] {
			add("spec.platforms[%d]: a second platform for %s", i, env)
		}
		seen[env] = true
		if !strings.HasPrefix(pl.URI, "https://") {
			add("spec.platforms[%d]: uri %q is not an https URL", i, pl.URI)
		}
		if !strings.HasSuffix(pl.URI, ".tar.gz") && !strings.HasSuffix(pl.URI, ".zip") {
			add("spec.platforms[%d]: uri %q is neither a .tar.gz nor a .zip archive", i, pl.URI)
		}
		if want := BinName(p.Metadata.Name, env.OS); pl.Bin != want {
			add("spec.platforms[%d]: bin is %q, want %q for %s", i, pl.Bin, want, env)
		}
		if !hasFileOp(pl.Files, func(from string) bool { return globMatches(from, pl.Bin) }) {
			add("spec.platforms[%d]: files do not install bin %q", i, pl.Bin)
		}
		if !hasFileOp(pl.Files, isLicenseFile) {
			add("spec.platforms[%d]: files do not install a LICENSE file", i)
		}
	}
	return errors.Join(errs...)
}

// Validate applies krew's checks and then the project's.
func Validate(name string, p Plugin) error {
	if err := ValidateKrew(name, p); err != nil {
		return fmt.Errorf("krew validation: %w", err)
	}
	if err := ValidateProject(p); err != nil {
		return fmt.Errorf("project rules: %w", err)
	}
	return nil
}

// BinName is the plugin executable kubectl finds on PATH for plugin name on goos.
func BinName(name, goos string) string {
	bin := "kubectl-" + strings.ReplaceAll(name, "-", "_")
	if goos == "windows" {
		bin += ".exe"
	}
	return bin
}

// exactPlatform requires a selector of matchLabels os and arch only, naming one supported pair.
func exactPlatform(sel *metav1.LabelSelector) (OSArch, error) {
	if sel == nil {
		return OSArch{}, errors.New("selector is missing")
	}
	if len(sel.MatchExpressions) > 0 {
		return OSArch{}, errors.New("selector uses matchExpressions: use matchLabels os and arch")
	}
	env := OSArch{OS: sel.MatchLabels["os"], Arch: sel.MatchLabels["arch"]}
	if len(sel.MatchLabels) != 2 || env.OS == "" || env.Arch == "" {
		return OSArch{}, fmt.Errorf("selector.matchLabels is %v: want exactly os and arch", sel.MatchLabels)
	}
	for _, s := range SupportedPlatforms() {
		if s == env {
			return env, nil
		}
	}
	return OSArch{}, fmt.Errorf("%s is not a platform krew supports", env)
}

func hasFileOp(ops []FileOperation, match func(from string) bool) bool {
	if ops == nil { // krew then installs the whole archive
		return true
	}
	for _, op := range ops {
		if match(op.From) {
			return true
		}
	}
	return false
}

func globMatches(pattern, name string) bool {
	ok, err := path.Match(pattern, name)
	return err == nil && ok
}

// isLicenseFile reports whether name (or a glob) names a file krew's validator accepts as the
// license, compared in lower case.
func isLicenseFile(name string) bool {
	base := strings.ToLower(path.Base(name))
	for _, l := range []string{"license", "license.txt", "license.md", "licenses", "licenses.txt", "licenses.md", "copying", "copying.txt"} {
		if base == l || globMatches(base, l) {
			return true
		}
	}
	return false
}

// looksLikeUsage flags command lines and code fences in prose.
func looksLikeUsage(line string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, "$ ") || strings.HasPrefix(t, "kubectl ") || strings.HasPrefix(t, "```") ||
		strings.HasPrefix(strings.ToLower(t), "usage:") || strings.HasPrefix(strings.ToLower(t), "example")
}
