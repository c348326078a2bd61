// The client-go baseline of the worker pipeline benchmark (tools/bench/bench_worker.sh):
// a shared informer for ConfigMaps whose handler enqueues the object's key into a
// rate-limited workqueue (DefaultControllerRateLimiter), served by -workers goroutines that
// run a no-op reconcile: it reads the object from the informer's cache and measures
// event → reconcile-start latency from the annotation bench.godis/sent-ns (CLOCK_MONOTONIC
// of the replay source, the same clock as here). Built against the client-go vendored in
// Debian's kubernetes source tree (tools/bench/build-clientgo.sh OUT clientgo_pipeline).
//
// On SIGTERM (or with -count N once N stamped events were seen and the queue drained) it
// writes one JSON line to -out, the same fields as the worker's bench set:
// events, reconciles, events_per_s, reconciles_per_s, latency_p50_ms, latency_p99_ms,
// latency_p999_ms. With -resync-ms events are told apart by resourceVersion: a resync that
// hands an object to the handler again is not a new event, and each event gives one sample,
// at the first reconcile that sees its state (without, no map costs the handler anything). -work-us makes each reconcile sleep that long
// after it measured (the resync benchmark: reconciles slower than the feed).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

func monoNs() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func sentNs(obj interface{}) int64 {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return 0
	}
	v, _ := strconv.ParseInt(cm.Annotations["bench.godis/sent-ns"], 10, 64)
	return v
}

type span struct{ first, last int64 }

func (s *span) stamp(now int64) {
	atomic.CompareAndSwapInt64(&s.first, 0, now)
	atomic.StoreInt64(&s.last, now)
}

func (s *span) rate(n int64) float64 {
	d := atomic.LoadInt64(&s.last) - atomic.LoadInt64(&s.first)
	if d <= 0 {
		return 0
	}
	return float64(n) / (float64(d) / 1e9)
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig path")
	namespace := flag.String("namespace", "", "namespace (default all)")
	workers := flag.Int("workers", 2, "reconcile goroutines (MaxConcurrentReconciles)")
	warmupMs := flag.Int64("warmup-ms", 2000, "samples of the first ms after the first event are dropped")
	out := flag.String("out", "", "result file (default stdout)")
	count := flag.Int64("count", 0, "finish once this many stamped events were seen and the queue is empty (0: at SIGTERM)")
	resyncMs := flag.Int64("resync-ms", 0, "the informer's resync period (0: none)")
	workUs := flag.Int64("work-us", 0, "each reconcile sleeps this long after it measured")
	flag.Parse()
	inf := configMapInformerResync("clientgo_pipeline", *kubeconfig, *namespace,
		time.Duration(*resyncMs)*time.Millisecond)
	q := workqueue.NewNamedRateLimitingQueue(workqueue.DefaultControllerRateLimiter(), "bench")

	var events, reconciles int64
	var evSpan, recSpan span
	var mu sync.Mutex
	var lat []int64
	dedup := *resyncMs > 0
	seen := map[string]bool{} // with dedup: rv of a stamped event -> its reconcile was sampled
	warmup := *warmupMs * 1000000
	enqueue := func(obj interface{}) {
		if s := sentNs(obj); s > 0 {
			old := false
			if dedup {
				rv := obj.(*corev1.ConfigMap).ResourceVersion
				mu.Lock()
				_, old = seen[rv]
				if !old {
					seen[rv] = false
				}
				mu.Unlock()
			}
			if !old {
				atomic.AddInt64(&events, 1)
				evSpan.stamp(monoNs())
			}
		}
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			q.Add(key)
		}
	}
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(old, obj interface{}) { enqueue(obj) },
		DeleteFunc: func(obj interface{}) {},
	})
	reconcile := func() bool {
		item, shutdown := q.Get()
		if shutdown {
			return false
		}
		defer q.Done(item)
		now := monoNs()
		atomic.AddInt64(&reconciles, 1)
		recSpan.stamp(now)
		obj, exists, _ := inf.GetIndexer().GetByKey(item.(string))
		if s := sentNs(obj); exists && s > 0 {
			if first := atomic.LoadInt64(&evSpan.first); first > 0 && now-first >= warmup {
				rv := obj.(*corev1.ConfigMap).ResourceVersion
				mu.Lock()
				if !dedup {
					lat = append(lat, now-s)
				} else if !seen[rv] {
					seen[rv] = true
					lat = append(lat, now-s)
				}
				mu.Unlock()
			}
		}
		q.Forget(item)
		if *workUs > 0 {
			// nanosleep, as the worker's bench set does: time.Sleep rounds sub-millisecond
			// waits up to the netpoller's millisecond, which would halve this side's rate
			ts := unix.NsecToTimespec(*workUs * 1000)
			for unix.Nanosleep(&ts, &ts) == unix.EINTR {
			}
		}
		return true
	}
	stop := make(chan struct{})
	go inf.Run(stop)
	for i := 0; i < *workers; i++ {
		go func() {
			for reconcile() {
			}
		}()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	if *count > 0 {
		go func() {
			for atomic.LoadInt64(&events) < *count || q.Len() > 0 {
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond)
			sig <- syscall.SIGTERM
		}()
	}
	<-sig
	close(stop)
	q.ShutDown()
	mu.Lock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(permille int) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[(len(lat)-1)*permille/1000]) / 1e6
	}
	line := fmt.Sprintf("{\"events\":%d,\"reconciles\":%d,\"events_per_s\":%.1f,\"reconciles_per_s\":%.1f,"+
		"\"latency_p50_ms\":%.3f,\"latency_p99_ms\":%.3f,\"latency_p999_ms\":%.3f,\"samples\":%d}\n",
		atomic.LoadInt64(&events), atomic.LoadInt64(&reconciles), evSpan.rate(atomic.LoadInt64(&events)),
		recSpan.rate(atomic.LoadInt64(&reconciles)), pct(500), pct(990), pct(999), len(lat))
	mu.Unlock()
	if *out != "" {
		os.WriteFile(*out, []byte(line), 0o644)
	} else {
		fmt.Print(line)
	}
}
