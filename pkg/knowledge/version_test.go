package knowledge

import (
	"testing"
)

func TestParseVersion(t *testing.T) {
	cases := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "v1.7.0", want: "v1.7.0"},
		{in: "1.7", want: "v1.7.0"},
		{in: "v1.37.1+k3s1", want: "v1.37.1"},
		{in: "v1.9.0-rc.1", want: "v1.9.0-rc.1"},
		{in: "v1.38.0-alpha.0.123+0a1b2c3", want: "v1.38.0-alpha.0.123"},
		{in: "v1.34.0-beta.1", want: "v1.34.0-beta.1"},
		// Managed control planes and mirrored images append a build suffix to the release.
		{in: "v1.33.5-eks-3cfe0ce", want: "v1.33.5"},
		{in: "v1.32.4-gke.1234000", want: "v1.32.4"},
		{in: "v1.31.2+k3s1", want: "v1.31.2"},
		{in: "v1.30.1-aliyun.1", want: "v1.30.1"},
		{in: "v1.7.3-hotfix2", want: "v1.7.3"},
		{in: " v0.5.0 ", want: "v0.5.0"},
		{in: "latest", wantErr: true},
		{in: "v1", wantErr: true},
		{in: "v1.2.3.4", wantErr: true},
		{in: "v1.x.0", wantErr: true},
		{in: "v01.2.3", wantErr: true},
		{in: "v1.2.3-", wantErr: true},
		{in: "+1.2.3", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, c := range cases {
		got, err := ParseVersion(c.in)
		if c.wantErr {
			if err == nil {
				t.Errorf("ParseVersion(%q) = %v, want error", c.in, got)
			}
			continue
		}
		if err != nil || got.String() != c.want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %s", c.in, got, err, c.want)
		}
	}
}

func TestCompare(t *testing.T) {
	order := []string{"v0.5.0", "v0.5.1", "v1.6.3", "v1.7.0-rc.1", "v1.7.0", "v1.8.4", "v1.9.0", "v1.10.0"}
	for i := range order {
		for j := range order {
			a, b := mustVersion(order[i]), mustVersion(order[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("%s.Compare(%s) = %d, want %d", a, b, got, want)
			}
		}
	}
}

// A vendor build of a release orders as that release, so the version ranges that pick defaulting
// rules (1.27-1.32 versus 1.33+) and known bugs see EKS 1.33 as 1.33.
func TestVendorSuffixOrdersAsBaseVersion(t *testing.T) {
	cases := []struct{ vendor, atLeast, below string }{
		{"v1.33.5-eks-3cfe0ce", "v1.33.0", "v1.34.0"},
		{"v1.32.4-gke.1234000", "v1.32.4", "v1.33.0"},
		{"v1.31.2+k3s1", "v1.31.2", "v1.32.0"},
	}
	for _, c := range cases {
		v := mustVersion(c.vendor)
		if !v.AtLeast(mustVersion(c.atLeast)) || !v.Less(mustVersion(c.below)) {
			t.Errorf("%s: want >= %s and < %s, parsed as %s", c.vendor, c.atLeast, c.below, v)
		}
	}
	if !(Range{From: "v1.27.0", Fixed: "v1.33.0"}).Contains(mustVersion("v1.32.9-eks-abcdef0")) {
		t.Errorf("EKS 1.32 must be inside [1.27, 1.33)")
	}
	if (Range{From: "v1.27.0", Fixed: "v1.33.0"}).Contains(mustVersion("v1.33.5-eks-3cfe0ce")) {
		t.Errorf("EKS 1.33 must be outside [1.27, 1.33)")
	}
}

func TestRangeContains(t *testing.T) {
	r := Range{From: "v1.4.0", Fixed: "v1.9.0"}
	for v, want := range map[string]bool{"v1.3.9": false, "v1.4.0": true, "v1.8.4": true, "v1.9.0": false, "v1.9.0-rc.1": true} {
		if got := r.Contains(mustVersion(v)); got != want {
			t.Errorf("%s in %s = %v, want %v", v, r, got, want)
		}
	}
	if !(Range{Fixed: "v1.7.0"}).Contains(mustVersion("v0.1.0")) || (Range{From: "v1.33.0"}).Contains(mustVersion("v1.32.2")) {
		t.Error("open-ended ranges are wrong")
	}
}

func TestImageVersion(t *testing.T) {
	cases := map[string]string{
		"openkruise/kruise-manager:v1.7.0":                      "v1.7.0",
		"registry.local:5000/mirror/kruise-manager:v1.8.4":      "v1.8.4",
		"ghcr.io/x/kruise-manager:v1.9.0@sha256:0123456789abcd": "v1.9.0",
		"registry.k8s.io/kwok/kwok:v0.5.0":                      "v0.5.0",
		"mirror.local/kruise-manager:v1.8.4-patched.2":          "v1.8.4",
	}
	for image, want := range cases {
		v, err := ImageVersion(image)
		if err != nil || v.String() != want {
			t.Errorf("ImageVersion(%q) = %v, %v; want %s", image, v, err, want)
		}
	}
	for _, bad := range []string{"openkruise/kruise-manager", "registry.local:5000/kruise-manager", "kruise-manager:latest"} {
		if v, err := ImageVersion(bad); err == nil {
			t.Errorf("ImageVersion(%q) = %v, want error", bad, v)
		}
	}
	if got := ImageRepository("registry.local:5000/mirror/kruise-manager:v1.8.4@sha256:ab"); got != "kruise-manager" {
		t.Errorf("ImageRepository = %q", got)
	}
}

func TestAffected(t *testing.T) {
	on := ParseFeatureGates([]string{"--feature-gates=CloneSetEventHandlerOptimization=true"})
	allAlpha := ParseFeatureGates([]string{"--feature-gates", "AllAlpha=true"})
	off := ParseFeatureGates([]string{"--feature-gates=AllAlpha=true,CloneSetEventHandlerOptimization=false"})
	cases := []struct {
		version string
		gates   FeatureGates
		want    bool
	}{
		{"v1.7.0", on, true},
		{"v1.7.0", allAlpha, true},
		{"v1.7.0", off, false},
		{"v1.7.0", nil, false},
		{"v1.9.0", on, false},
		{"v1.3.0", on, false},
	}
	for _, c := range cases {
		if _, got := Affected(BugPreNormalEventDropped, mustVersion(c.version), c.gates); got != c.want {
			t.Errorf("Affected(%s, %v) = %v, want %v", c.version, c.gates, got, c.want)
		}
	}
	if _, ok := Affected("no-such-bug", mustVersion("v1.0.0"), nil); ok {
		t.Error("unknown bug reported as affecting")
	}
}

func TestBugTableParses(t *testing.T) {
	for _, b := range Bugs() {
		for _, v := range []string{b.Affected.From, b.Affected.Fixed} {
			if v == "" {
				continue
			}
			if _, err := ParseVersion(v); err != nil {
				t.Errorf("bug %s: %v", b.ID, err)
			}
		}
		if len(b.Reference) == 0 {
			t.Errorf("bug %s has no reference", b.ID)
		}
	}
}

func TestFlags(t *testing.T) {
	args := []string{"/manager", "--expectation-timeout=30s", "--leader-election-id", "custom", "-feature-gates=A=true"}
	if d := FlagDuration(args, "expectation-timeout", 0); d.String() != "30s" {
		t.Errorf("expectation-timeout = %v", d)
	}
	if v := FlagValue(args, "leader-election-id", "kruise-manager"); v != "custom" {
		t.Errorf("leader-election-id = %q", v)
	}
	if !ParseFeatureGates(args).Enabled("A", false) {
		t.Error("single-dash feature gates not read")
	}
	if d := FlagDuration(args, "missing", 5); d != 5 {
		t.Errorf("default not used: %v", d)
	}
}

// FuzzParseVersion checks that parsing never panics and that what parses round-trips.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"v1.7.0", "1.2", "v1.9.0-rc.1", "v1.37.1+k3s1", "", "v", "1..2", "v-1.2.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		again, err := ParseVersion(v.String())
		if err != nil {
			t.Fatalf("%q parsed to %v, which does not parse: %v", s, v, err)
		}
		if again.Compare(v) != 0 {
			t.Fatalf("%q: %v round-trips to %v", s, v, again)
		}
		if v.Major < 0 || v.Minor < 0 || v.Patch < 0 {
			t.Fatalf("%q: negative component in %v", s, v)
		}
	})
}
