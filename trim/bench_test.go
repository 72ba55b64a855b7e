package trim_test

import (
	"bytes"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/trim"
)

// pageSize is how many pods one List page holds, as a reflector pages its
// first List.
const pageSize = 500

// BenchmarkCacheMemory measures what tidal's pod cache holds per 1,000
// pods of the bench-gen clusters as the API server stores them: every pod
// decoded from the JSON of a List page, as a reflector decodes it, copied
// out of the list (as the reflector does, so the page can go), passed to
// no transform, to trim.Pod, or to a trim.Sharer's Transform (tidal's),
// and kept by an indexer with the namespace index, as the informer's store
// keeps it.
func BenchmarkCacheMemory(b *testing.B) {
	for _, s := range []struct {
		name string
		p    func() benchgen.Params
	}{{"S2", benchgen.S2}, {"S3", benchgen.S3}} {
		b.Run(s.name, func(b *testing.B) {
			pages, pods := encodedPods(b, s.p())
			for _, v := range []struct {
				name      string
				transform func() func(*corev1.Pod) error
			}{
				{"stored", func() func(*corev1.Pod) error { return func(*corev1.Pod) error { return nil } }},
				{"trimmed", func() func(*corev1.Pod) error { return func(p *corev1.Pod) error { trim.Pod(p); return nil } }},
				{"shared", func() func(*corev1.Pod) error {
					s := trim.NewSharer()
					return func(p *corev1.Pod) error { _, err := s.Transform(p); return err }
				}},
			} {
				b.Run(v.name, func(b *testing.B) {
					var held uint64
					for b.Loop() {
						held = heapHeld(b, func() any { return cacheOf(b, pages, v.transform()) })
					}
					b.ReportMetric(float64(held)/float64(pods)*1000/(1<<20), "MiB-per-1k-pods")
				})
			}
		})
	}
}

// encodedPods returns the pods of the stored cluster of p as the JSON of
// List pages, and how many there are.
func encodedPods(b *testing.B, p benchgen.Params) ([][]byte, int) {
	c := benchgen.Generate(p)
	if err := c.Store(benchgen.StoreOptions{}); err != nil {
		b.Fatal(err)
	}
	all := append(c.RunningPods, c.PendingPods...)
	enc := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{})
	var pages [][]byte
	for start := 0; start < len(all); start += pageSize {
		list := &corev1.PodList{}
		list.APIVersion, list.Kind = "v1", "PodList"
		for _, pod := range all[start:min(start+pageSize, len(all))] {
			list.Items = append(list.Items, *pod)
		}
		var buf bytes.Buffer
		if err := enc.Encode(list, &buf); err != nil {
			b.Fatal(err)
		}
		pages = append(pages, buf.Bytes())
	}
	return pages, len(all)
}

// cacheOf decodes the pages into an informer's store, every pod passed to
// transform.
func cacheOf(b *testing.B, pages [][]byte, transform func(*corev1.Pod) error) cache.Indexer {
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	dec := scheme.Codecs.UniversalDeserializer()
	for _, page := range pages {
		obj, _, err := dec.Decode(page, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		list := obj.(*corev1.PodList)
		for i := range list.Items {
			pod := new(corev1.Pod)
			*pod = list.Items[i]
			if err := transform(pod); err != nil {
				b.Fatal(err)
			}
			if err := store.Add(pod); err != nil {
				b.Fatal(err)
			}
		}
	}
	return store
}

// heapHeld returns how many bytes of heap what build returns holds.
func heapHeld(b *testing.B, build func() any) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	if after.HeapAlloc < before.HeapAlloc {
		b.Fatalf("heap shrank from %d to %d bytes while building", before.HeapAlloc, after.HeapAlloc)
	}
	return after.HeapAlloc - before.HeapAlloc
}
