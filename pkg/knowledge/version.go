// Package knowledge holds what the checks know about the components they diagnose: version
// parsing, the known bugs with their affected ranges, feature gates and known finalizer owners.
// It is data and small pure helpers, so a new release or a new bug is one table row.
package knowledge

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a semantic version as Kubernetes components and images report it.
type Version struct {
	Major, Minor, Patch int
	// Pre is the pre-release part ("rc.1"). Build metadata after '+' and vendor suffixes after
	// '-' ("eks-3cfe0ce", "gke.1234000") are dropped: they name a build of the base version.
	Pre string
}

// ParseVersion accepts "v1.7.0", "1.7", "v1.37.1+k3s1", "v1.9.0-rc.1", "v1.33.5-eks-3cfe0ce".
func ParseVersion(s string) (Version, error) {
	orig := s
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "v"), "V")
	if i := strings.IndexByte(s, '+'); i >= 0 {
		s = s[:i]
	}
	var v Version
	if i := strings.IndexByte(s, '-'); i >= 0 {
		suffix := s[i+1:]
		s = s[:i]
		if suffix == "" {
			return Version{}, fmt.Errorf("version %q: empty pre-release", orig)
		}
		if isPreRelease(suffix) {
			v.Pre = suffix
		}
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("version %q: want MAJOR.MINOR[.PATCH]", orig)
	}
	nums := [3]int{}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || !digits(p) || (len(p) > 1 && p[0] == '0') {
			return Version{}, fmt.Errorf("version %q: %q is not a number", orig, p)
		}
		nums[i] = n
	}
	v.Major, v.Minor, v.Patch = nums[0], nums[1], nums[2]
	return v, nil
}

// isPreRelease tells a pre-release ("rc.1", "beta.0", "alpha.2.15") from a vendor's build suffix
// ("eks-3cfe0ce", "gke.1234000", "tke.3"). Managed clusters and mirrored images append the latter
// to the release they are built from, so ordering them as pre-releases would put EKS 1.33 below
// 1.33.0. Kubernetes and OpenKruise name their pre-releases alpha, beta and rc.
func isPreRelease(suffix string) bool {
	first, _, _ := strings.Cut(suffix, ".")
	first, _, _ = strings.Cut(first, "-")
	word := strings.TrimRight(strings.ToLower(first), "0123456789")
	switch word {
	case "alpha", "beta", "rc", "pre", "dev":
		return true
	}
	return false
}

func digits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// mustVersion parses a version from a table literal; only for package-level tables in tests
// and data whose values are fixed in source.
func mustVersion(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err) // a typo in a table literal is a programming error caught by the package's tests
	}
	return v
}

// String renders the version with a leading v.
func (v Version) String() string {
	s := fmt.Sprintf("v%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	return s
}

// Compare returns -1, 0 or 1. A pre-release sorts before its release (v1.9.0-rc.1 < v1.9.0).
func (v Version) Compare(o Version) int {
	for _, d := range [3]int{v.Major - o.Major, v.Minor - o.Minor, v.Patch - o.Patch} {
		if d < 0 {
			return -1
		}
		if d > 0 {
			return 1
		}
	}
	switch {
	case v.Pre == o.Pre:
		return 0
	case v.Pre == "":
		return 1
	case o.Pre == "":
		return -1
	case v.Pre < o.Pre:
		return -1
	}
	return 1
}

// Less reports v < o.
func (v Version) Less(o Version) bool { return v.Compare(o) < 0 }

// AtLeast reports v >= o.
func (v Version) AtLeast(o Version) bool { return v.Compare(o) >= 0 }

// Range is the half-open interval [From, Fixed) of affected versions. A zero Fixed means not fixed yet.
type Range struct {
	From, Fixed string
}

// Contains reports whether v is in the range.
func (r Range) Contains(v Version) bool {
	if r.From != "" && v.Less(mustVersion(r.From)) {
		return false
	}
	return r.Fixed == "" || v.Less(mustVersion(r.Fixed))
}

// String renders the range for evidence lines, e.g. ">= v1.4.0, < v1.9.0".
func (r Range) String() string {
	var parts []string
	if r.From != "" {
		parts = append(parts, ">= "+r.From)
	}
	if r.Fixed != "" {
		parts = append(parts, "< "+r.Fixed)
	}
	return strings.Join(parts, ", ")
}

// ImageVersion parses the version from a container image reference's tag:
// "ghcr.io/mirror/kruise-manager:v1.7.0@sha256:..." -> v1.7.0. Mirrors rename registries and
// repositories, so only the tag is trusted.
func ImageVersion(image string) (Version, error) {
	ref := image
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	slash := strings.LastIndexByte(ref, '/')
	colon := strings.LastIndexByte(ref, ':')
	if colon <= slash {
		return Version{}, fmt.Errorf("image %q has no tag", image)
	}
	v, err := ParseVersion(ref[colon+1:])
	if err != nil {
		return Version{}, fmt.Errorf("image %q: %w", image, err)
	}
	return v, nil
}

// ImageRepository returns the last path element of an image reference without tag or digest:
// "openkruise/kruise-manager:v1.7.0" -> "kruise-manager".
func ImageRepository(image string) string {
	ref := image
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndexByte(ref, '/'); i >= 0 {
		ref = ref[i+1:]
	}
	if i := strings.IndexByte(ref, ':'); i >= 0 {
		ref = ref[:i]
	}
	return ref
}
