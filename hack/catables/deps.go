package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// depFlag is a flag a module CA requires registers in an init function
// of a package CA links, on Go's flag.CommandLine (so CA's command has it).
type depFlag struct {
	module, file string
	flag         caFlag
}

// depFlags are those flags. The generator checks each against the module
// at the version CA's go.mod requires, fetched from the module proxy: the
// registration is in the file and the default's values are its literals.
var depFlags = []depFlag{
	{"k8s.io/cloud-provider-gcp/providers", "gce/gce_loadbalancer.go",
		caFlag{Name: "cloud-provider-gce-lb-src-cidrs", Type: "cidrs", Default: "130.211.0.0/22,209.85.152.0/22,209.85.204.0/22,35.191.0.0/16"}},
	{"k8s.io/cloud-provider-gcp/providers", "gce/gce_loadbalancer.go",
		caFlag{Name: "cloud-provider-gce-l7lb-src-cidrs", Type: "cidrs", Default: "130.211.0.0/22,35.191.0.0/16"}},
}

func dependencyFlags(src source) ([]caFlag, error) {
	gomod, err := src.readFile("go.mod")
	if err != nil {
		return nil, err
	}
	var out []caFlag
	for _, d := range depFlags {
		version := requiredVersion(string(gomod), d.module)
		if version == "" {
			return nil, fmt.Errorf("CA no longer requires %s: drop --%s from the generator's depFlags", d.module, d.flag.Name)
		}
		dir, _, err := download(d.module, version)
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(filepath.Join(dir, d.file))
		if err != nil {
			return nil, err
		}
		text := string(data)
		if !strings.Contains(text, `"`+d.flag.Name+`"`) {
			return nil, fmt.Errorf("%s@%s no longer registers --%s in %s", d.module, version, d.flag.Name, d.file)
		}
		for _, cidr := range strings.Split(d.flag.Default, ",") {
			if !strings.Contains(text, `"`+cidr+`"`) {
				return nil, fmt.Errorf("%s@%s: --%s's default no longer has %s", d.module, version, d.flag.Name, cidr)
			}
		}
		f := d.flag
		f.From = d.module + " " + version
		out = append(out, f)
	}
	return out, nil
}

// download fetches a module from the module proxy into the module cache
// and returns its directory and exact version.
func download(module, version string) (string, string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir() // outside tidal's module: its go.mod stays as it is
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var res struct{ Dir, Version, Error string }
	if jerr := json.Unmarshal(out, &res); jerr != nil || res.Error != "" || err != nil {
		return "", "", fmt.Errorf("go mod download %s@%s: %v %s", module, version, err, res.Error)
	}
	return res.Dir, res.Version, nil
}
