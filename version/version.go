// Package version is tidal's own version, as --version prints it and the
// user agent carries it.
package version

import "runtime/debug"

// version is set at build time: go build -ldflags "-X
// github.com/tidal-autoscaler/tidal/version.version=v1.2.3".
var version string

// Get is the version given at build time, else the module version or VCS
// revision Go recorded in the binary, else "devel".
func Get() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return fromBuildInfo(info)
}

func fromBuildInfo(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return "devel-" + rev + dirty
}
