package benchgen

import (
	"io"
	"testing"
)

// BenchmarkGenerateS3 measures generating the 5,000-node cluster.
func BenchmarkGenerateS3(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Generate(S3())
	}
}

// BenchmarkCanonicalS3 measures writing (hashing) the S3 canonical listing.
func BenchmarkCanonicalS3(b *testing.B) {
	c := Generate(S3())
	b.ReportAllocs()
	for b.Loop() {
		c.CanonicalSHA256()
	}
}

// BenchmarkWriteYAMLS2 measures the YAML list of the 1,000-node cluster.
func BenchmarkWriteYAMLS2(b *testing.B) {
	c := Generate(S2())
	b.ReportAllocs()
	for b.Loop() {
		if err := c.WriteYAML(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
