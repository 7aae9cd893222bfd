package redisstore_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/redisstore"
)

// New puts the quota's shared part in Redis: a Retry-After one process
// shares is a horizon every other process sees, and a fleet cap is counted
// across them. (This example starts its own redis-server.)
func ExampleNew() {
	addr, stop := exampleRedis()
	defer stop()
	ctx := context.Background()
	key := "https://api.openai.com:443"
	now := time.Now()

	// Two processes' stores.
	a := redis.NewClient(redisstore.ClientOptions(addr))
	defer a.Close()
	one := redisstore.New(a, redisstore.WithTimeout(5*time.Second))
	defer one.Close()
	b := redis.NewClient(redisstore.ClientOptions(addr))
	defer b.Close()
	other := redisstore.New(b, redisstore.WithTimeout(5*time.Second))
	defer other.Close()

	fmt.Println(one.SetHorizon(ctx, key, now.Add(20*time.Second)))
	r, _ := other.Reserve(ctx, key, now, 2, time.Minute) // reads the horizon too
	fmt.Println(r.OK, r.Count, r.Horizon.Sub(now).Round(time.Second))
	r, _ = one.Reserve(ctx, key, now, 2, time.Minute)
	fmt.Println(r.OK, r.Count)
	r, _ = other.Reserve(ctx, key, now, 2, time.Minute)
	fmt.Println(r.OK, r.Count, "(the fleet cap of 2)")

	// Used by a quota layer:
	q, err := quota.New(quota.WithStore(other), quota.WithFleetCap(30))
	fmt.Println(q.Name(), err)
	// Output:
	// <nil>
	// true 1 20s
	// true 2
	// false 2 (the fleet cap of 2)
	// quota <nil>
}

// exampleRedis starts a redis-server on a free loopback port without
// persistence and returns its address and a function that stops it.
func exampleRedis() (string, func()) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		panic("redis-server is not installed: " + err.Error())
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(20 * time.Second); c.Ping(context.Background()).Err() != nil; {
		if time.Now().After(deadline) {
			panic("redis-server did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return addr, func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
}
