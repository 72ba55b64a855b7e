package testenv

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidal-autoscaler/tidal/localcluster"
)

// ClustersEnv, when set, is how many clusters each pool runs at most (at
// least 1): TIDAL_TEST_CLUSTERS=1 runs a suite's tests one cluster at a time.
const ClustersEnv = "TIDAL_TEST_CLUSTERS"

// Pool is a set of local clusters that a suite's tests lease, each for the
// whole of one test: a test that runs tidal has a cluster of its own (tidal
// reads every pod and node of its cluster, and writes its status and lease
// in kube-system), so tests that call t.Parallel() run side by side, each on
// its own cluster, and their waits on tidal's timers overlap.
//
// Clusters start when a test needs one and none is free, up to the pool's
// size; then a test waits for one to be returned. A returned cluster is
// swept back to the state it had when it started (see sweep) before another
// test gets it; one that cannot be swept clean fails the test that returned
// it and is stopped.
type Pool struct {
	name string
	size int
	opts func(dir string) (localcluster.Options, error)
	// fresh: a returned cluster is stopped, never given to another test.
	fresh bool

	// starting lets one cluster of the pool start at a time: a control
	// plane's start is the most CPU a cluster takes, and several at once on
	// a busy machine make each slower than their sum.
	starting sync.Mutex

	mu      sync.Mutex
	changed *sync.Cond // a member was freed, started or dropped
	members []*member
	running int // members plus clusters being started
	leases  map[string]*lease
}

type member struct {
	c *localcluster.Cluster
	// dir is the cluster's directory, made by the pool.
	dir string
	// baseline holds the objects the cluster had when it started and those
	// fixtures made on it (Keep); the sweep removes every other.
	baseline map[objectKey]bool
	// fixtures are values made once on this cluster (Fixture).
	fixtures map[any]any
	// exclusive: one test holds the cluster; sharers: how many tests
	// share it; sweeping: it is being swept after its last test.
	exclusive bool
	sharers   int
	sweeping  bool
}

func (m *member) free() bool { return !m.exclusive && m.sharers == 0 && !m.sweeping }

type lease struct {
	m        *member
	released bool
}

// NewPool makes a pool of at most size clusters (ClustersEnv overrides it),
// each started with the options opts gives for its directory. No cluster
// starts until a test asks for one.
func NewPool(name string, size int, opts func(dir string) (localcluster.Options, error)) *Pool {
	if v, err := strconv.Atoi(os.Getenv(ClustersEnv)); err == nil && v >= 1 {
		size = v
	}
	p := &Pool{name: name, size: max(size, 1), opts: opts, leases: map[string]*lease{}}
	p.changed = sync.NewCond(&p.mu)
	return p
}

// Fresh makes every lease of p a cluster of its own, started for the test
// and stopped after it, for tests that load so much into a cluster that a
// sweep would take longer than a new start.
func (p *Pool) Fresh() *Pool {
	p.fresh = true
	return p
}

// Lease gives the test a cluster of its own until it ends; a second call in
// the same test (or in one of its subtests) gives the same cluster. It
// waits while every cluster of the pool is in use. Call it first in the
// test, right after t.Parallel(), so that the cluster is returned after
// every other clean-up of the test has run.
func (p *Pool) Lease(t testing.TB) *localcluster.Cluster { return p.get(t, false) }

// LeaseOwn is Lease for a subtest that needs a cluster apart from its
// parent's and its siblings' (each size of a benchmark loads a cluster of
// its own). The lease is keyed by the subtest's full name, so the subtest
// hands the cluster to its own subtests (Lease in them keys on the
// top-level test). It is returned when the subtest ends.
func (p *Pool) LeaseOwn(t testing.TB) *localcluster.Cluster { return p.getAs(t, t.Name(), false) }

// Share gives the test a cluster that other sharing tests may use at the
// same time, never one leased by Lease. Only a test that starts no tidal,
// keeps its objects in namespaces of its own (NewNamespace) and names its
// nodes with a prefix of its own may share.
func (p *Pool) Share(t testing.TB) *localcluster.Cluster { return p.get(t, true) }

func (p *Pool) get(t testing.TB, shared bool) *localcluster.Cluster {
	t.Helper()
	return p.getAs(t, topName(t), shared)
}

// getAs is get with the lease named name.
func (p *Pool) getAs(t testing.TB, name string, shared bool) *localcluster.Cluster {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.leases[name]; l != nil {
		if l.released {
			t.Fatalf("%s: cluster used after the test returned it to the pool (lease it first in the test)", p.name)
		}
		return l.m.c
	}
	for {
		if m := p.pick(shared); m != nil {
			return p.hold(t, name, m, shared)
		}
		if p.running < p.size {
			m, err := p.start()
			if err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
			return p.hold(t, name, m, shared)
		}
		p.changed.Wait()
	}
}

// pick is a member the test may take now: for a sharing test, preferably
// one already shared.
func (p *Pool) pick(shared bool) *member {
	if shared {
		for _, m := range p.members {
			if m.sharers > 0 && !m.sweeping {
				return m
			}
		}
	}
	for _, m := range p.members {
		if m.free() {
			return m
		}
	}
	return nil
}

func (p *Pool) hold(t testing.TB, name string, m *member, shared bool) *localcluster.Cluster {
	if shared {
		m.sharers++
	} else {
		m.exclusive = true
	}
	l := &lease{m: m}
	p.leases[name] = l
	t.Cleanup(func() { p.release(t, name, l, shared) })
	return m.c
}

// start starts a cluster, with p.mu held on entry and on return (released
// while the cluster starts).
func (p *Pool) start() (*member, error) {
	p.running++
	p.mu.Unlock()
	p.starting.Lock()
	m, err := p.startMember()
	p.starting.Unlock()
	p.mu.Lock()
	if err != nil {
		p.running--
		p.changed.Broadcast()
		return nil, err
	}
	p.members = append(p.members, m)
	return m, nil
}

func (p *Pool) startMember() (*member, error) {
	dir, err := os.MkdirTemp("", "tidal-"+p.name+"-")
	if err != nil {
		return nil, err
	}
	begin := time.Now()
	opts, err := p.opts(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("options of a local cluster: %w", err)
	}
	opts.Dir = dir
	c, err := localcluster.Start(context.Background(), opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start local cluster: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base, err := snapshot(ctx, c)
	if err != nil {
		c.Stop()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("objects of the new cluster: %w", err)
	}
	fmt.Fprintf(os.Stderr, "%s: local cluster %s ready in %v\n", p.name, dir, time.Since(begin).Round(time.Millisecond))
	return &member{c: c, dir: dir, baseline: base, fixtures: map[any]any{}}, nil
}

// release returns the test's cluster; the last test to return it sweeps it.
func (p *Pool) release(t testing.TB, name string, l *lease, shared bool) {
	p.mu.Lock()
	l.released = true
	delete(p.leases, name)
	m := l.m
	if shared {
		m.sharers--
	} else {
		m.exclusive = false
	}
	last := m.sharers == 0 && !m.exclusive
	if last {
		m.sweeping = true
	}
	baseline := m.baseline
	p.mu.Unlock()
	if !last {
		return
	}
	if p.fresh {
		p.mu.Lock()
		p.drop(m)
		p.changed.Broadcast()
		p.mu.Unlock()
		return
	}
	err := sweep(m.c, baseline)
	p.mu.Lock()
	m.sweeping = false
	if err != nil {
		p.drop(m)
	}
	p.changed.Broadcast()
	p.mu.Unlock()
	if err != nil {
		t.Errorf("%s: the cluster this test used is not clean after it, and is stopped: %v", p.name, err)
	}
}

// drop removes a member and stops its cluster, with p.mu held.
func (p *Pool) drop(m *member) {
	for i, x := range p.members {
		if x == m {
			p.members = append(p.members[:i], p.members[i+1:]...)
			break
		}
	}
	p.running--
	m.c.Stop()
	os.RemoveAll(m.dir)
}

// Keep adds objects a fixture made on c to what c keeps between tests:
// the sweep leaves them in place.
func (p *Pool) Keep(c *localcluster.Cluster, objs ...Object) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.members {
		if m.c == c {
			for _, o := range objs {
				m.baseline[o.key()] = true
			}
		}
	}
}

// Stop stops every cluster of the pool.
func (p *Pool) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.members) > 0 {
		p.drop(p.members[0])
	}
}

// topName is the name of the top-level test of t: a test and its subtests
// hold one lease.
func topName(t testing.TB) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return name
}

// Fixture is something set up once on each cluster of a pool, the first
// time a test on that cluster asks for it, and kept for the cluster's life
// (the objects it makes go to Pool.Keep).
type Fixture[T any] struct {
	Setup func(c *localcluster.Cluster) (T, error)
	mu    sync.Mutex
}

type fixtureResult[T any] struct {
	v   T
	err error
}

// Get is the fixture's value on the test's cluster, set up on first use.
func (f *Fixture[T]) Get(t testing.TB, p *Pool) T {
	t.Helper()
	c := p.get(t, false)
	m := p.memberOf(c)
	f.mu.Lock()
	defer f.mu.Unlock()
	p.mu.Lock()
	r, ok := m.fixtures[f].(fixtureResult[T])
	p.mu.Unlock()
	if !ok {
		v, err := f.Setup(c)
		r = fixtureResult[T]{v: v, err: err}
		p.mu.Lock()
		m.fixtures[f] = r
		p.mu.Unlock()
	}
	if r.err != nil {
		t.Fatalf("set up on the cluster: %v", r.err)
	}
	return r.v
}

func (p *Pool) memberOf(c *localcluster.Cluster) *member {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.members {
		if m.c == c {
			return m
		}
	}
	return nil
}
