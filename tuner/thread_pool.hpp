// A fixed pool of threads running submitted jobs; used to compile candidates ahead of the GPU.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace ktune {

class ThreadPool {
 public:
  // 0: one per hardware thread. Throws Error(kInternal) with the system's reason when a thread
  // cannot be started (the ones already started are joined first).
  explicit ThreadPool(unsigned threads);
  ~ThreadPool();  // finishes queued jobs, then joins
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  template <typename F>
  auto submit(F f) -> std::future<decltype(f())> {
    auto task = std::make_shared<std::packaged_task<decltype(f())()>>(std::move(f));
    auto future = task->get_future();
    {
      std::lock_guard lock(mutex_);
      jobs_.emplace_back([task] { (*task)(); });
    }
    ready_.notify_one();
    return future;
  }
  unsigned size() const { return static_cast<unsigned>(threads_.size()); }

 private:
  void work();
  void stop();  // finishes queued jobs, joins every thread
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

}  // namespace ktune
