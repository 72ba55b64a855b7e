package benchgen

import (
	"encoding/json"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestYAMLItemExact(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{}`, "- {}\n"},
		{`{"a":1}`, "- a: 1\n"},
		{`{"a":{"b":"x","c":[]},"d":{}}`, "- a:\n    b: x\n    c: []\n  d: {}\n"},
		{`{"l":[{"k":"v","n":null},{"b":true}]}`, "- l:\n  - k: v\n    \"n\": null\n  - b: true\n"},
		{`{"q":"4","y":"yes","e":"","s":"a b"}`, "- q: \"4\"\n  \"y\": \"yes\"\n  e: \"\"\n  s: \"a b\"\n"},
		{`{"kubernetes.io/os":"linux"}`, "- kubernetes.io/os: linux\n"},
		{`{"m":[[1,2],[]]}`, "- m:\n  - \n    - 1\n    - 2\n  - []\n"},
	}
	for _, tt := range tests {
		got, err := yamlItem(nil, []byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("yamlItem(%s) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestYAMLItemReadsBack checks that a YAML parser reads every output back
// as the input JSON.
func TestYAMLItemReadsBack(t *testing.T) {
	inputs := []string{
		`{"a":{"b":{"c":{}}},"l":[],"x":-1.5e3,"t":false}`,
		`{"s":["On","off","NULL","Y","n","~","0x10","1e3",".inf","-","a:b","#c","a b","x\n\"y\"","\u003ctag\u003e","é"]}`,
		`{"quoted key":"v","":"empty key","2026-01-01T00:00:00Z":"ts"}`,
		`{"deep":[[[{"a":[1,[2,{}]]}]]]}`,
	}
	for _, in := range inputs {
		out, err := yamlItem(nil, []byte(in))
		if err != nil {
			t.Fatalf("yamlItem(%s): %v", in, err)
		}
		js, err := yaml.YAMLToJSON(out)
		if err != nil {
			t.Fatalf("YAML of %s does not parse: %v\n%s", in, err, out)
		}
		var got, want any
		if err := json.Unmarshal(js, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte("["+in+"]"), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("YAML of %s reads back as %s:\n%s", in, js, out)
		}
	}
}

func TestYAMLItemRejectsMalformedJSON(t *testing.T) {
	for _, in := range []string{``, `[]`, `{"a"}`, `{"a":1`, `{"a":}`, `{"a":"x}`, `{"a":1}x`} {
		if _, err := yamlItem(nil, []byte(in)); err == nil {
			t.Errorf("yamlItem(%q) succeeded, want an error", in)
		}
	}
}
