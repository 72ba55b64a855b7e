package config

import (
	"strings"
	"testing"
	"unicode"
)

// Fuzz targets of the flag parsers: no input panics, every error names its
// flag, and what is accepted holds the parser's promises and prints back
// to itself.

func FuzzParseNodeGroupSpec(f *testing.F) {
	for _, seed := range []string{"1:10:pool-a", "0:1:x", "2:5:asg:with:colons", "5:2:x", "a:b", "-1:2:x", "1:2:",
		"0:0:x", "1:2:a b", "", "+1:02:x", "1:9223372036854775807:big", "1:99999999999999999999:x",
		"0:3:eks-ng-2a4b9f3c-12ab-34cd-56ef-7890abcdef12", "1:2:line\rfeed", "1:2:tab\tname", "1:2:\u00a0nbsp", "1:2:é"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		s, err := ParseNodeGroupSpec(value)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--nodes=") {
				t.Fatalf("error %q does not name --nodes", err)
			}
			return
		}
		if s.MinSize < 0 || s.MinSize > s.MaxSize || s.MaxSize < 1 {
			t.Fatalf("%q accepted with sizes %d:%d", value, s.MinSize, s.MaxSize)
		}
		if s.Name == "" || strings.IndexFunc(s.Name, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
			t.Fatalf("%q accepted with name %q", value, s.Name)
		}
		again, err := ParseNodeGroupSpec(s.String())
		if err != nil || again != s {
			t.Fatalf("%q parses to %+v, whose String %q parses to %+v, %v", value, s, s.String(), again, err)
		}
	})
}

func FuzzParseMinMax(f *testing.F) {
	for _, seed := range []string{"0:320000", "0:6400000", "10:1", "-1:5", "0:17179869185", "0:18446744073709552",
		"0:9223372036854775807", "x:1", "1", ":", "0:", " 1:2", "0x10:20", "1:2:3"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		for _, limit := range []int64{maxCoresTotal, maxMemoryTotalGiB} {
			min, max, err := parseMinMax("--cores-total", value, limit)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "--cores-total=") {
					t.Fatalf("error %q does not name the flag", err)
				}
				continue
			}
			if min < 0 || min > max || max > limit {
				t.Fatalf("%q accepted as %d:%d with limit %d", value, min, max, limit)
			}
		}
	})
}

func FuzzParseASGAutoDiscoverySpec(f *testing.F) {
	for _, seed := range []string{autoDiscoveryExample, "asg:tag=k8s.io/cluster-autoscaler/enabled=true,team=web",
		"asg:tag=", "asg:tag=a,a", "mig:tag=x", "asg:name=x", "asg", "asg:tag=,x", "asg:tag= x", "asg:tag=k=v=w",
		"asg:tag=" + strings.Repeat("k", 129), "asg:tag=a\rb"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		s, err := ParseASGAutoDiscoverySpec(value)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--node-group-auto-discovery=") {
				t.Fatalf("error %q does not name the flag", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, tag := range s.Tags {
			if tag.Key == "" || len(tag.Key) > 128 || seen[tag.Key] || strings.TrimSpace(tag.Key) != tag.Key ||
				strings.IndexFunc(tag.Key+tag.Value, unicode.IsControl) >= 0 {
				t.Fatalf("%q accepted with tag key %q", value, tag.Key)
			}
			seen[tag.Key] = true
		}
		again, err := ParseASGAutoDiscoverySpec(s.String())
		if err != nil || again.String() != s.String() {
			t.Fatalf("%q parses to %v, which parses to %v, %v", value, s, again, err)
		}
	})
}
