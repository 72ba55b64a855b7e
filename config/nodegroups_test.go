package config

import (
	"strings"
	"testing"
)

func TestParseNodeGroupSpec(t *testing.T) {
	tests := []struct {
		value   string
		want    NodeGroupSpec
		wantErr string
	}{
		{value: "1:10:pool-a", want: NodeGroupSpec{MinSize: 1, MaxSize: 10, Name: "pool-a"}},
		{value: "0:1:x", want: NodeGroupSpec{MinSize: 0, MaxSize: 1, Name: "x"}},
		{value: "2:5:asg:with:colons", want: NodeGroupSpec{MinSize: 2, MaxSize: 5, Name: "asg:with:colons"}},
		{value: "5:2:x", wantErr: `--nodes="5:2:x": minimum size 5 is greater than maximum size 2`},
		{value: "a:b", wantErr: `--nodes="a:b": want MIN:MAX:NAME`},
		{value: "a:2:x", wantErr: `--nodes="a:2:x": minimum size "a" is not an integer`},
		{value: "1:b:x", wantErr: `--nodes="1:b:x": maximum size "b" is not an integer`},
		{value: "-1:2:x", wantErr: `--nodes="-1:2:x": minimum size -1 is negative`},
		{value: "1:2:", wantErr: `--nodes="1:2:": the node group name is empty`},
		{value: "0:0:x", wantErr: `--nodes="0:0:x": maximum size must be at least 1`},
		{value: "1:2:a b", wantErr: `contains white space`},
		{value: "", wantErr: `--nodes="": want MIN:MAX:NAME`},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			got, err := ParseNodeGroupSpec(tc.value)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseNodeGroupSpecsRejectsDuplicates(t *testing.T) {
	_, err := ParseNodeGroupSpecs([]string{"1:3:a", "0:2:b", "2:4:a"})
	if err == nil || !strings.Contains(err.Error(), `node group "a" is already given by --nodes="1:3:a"`) {
		t.Fatalf("error = %v, want a duplicate-name error naming both values", err)
	}
	specs, err := ParseNodeGroupSpecs([]string{"1:3:a", "0:2:b"})
	if err != nil || len(specs) != 2 || specs[1].Name != "b" {
		t.Fatalf("got %v, %v; want two specs", specs, err)
	}
}
