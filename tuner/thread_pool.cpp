// Thread pool implementation.
#include "tuner/thread_pool.hpp"

#include <system_error>

#include "ktune/error.hpp"

namespace ktune {

ThreadPool::ThreadPool(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  try {
    for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
  } catch (const std::system_error& e) {
    // The threads started so far are stopped and joined: no std::terminate from a destructor
    // of a joinable thread, and the caller gets the system's reason.
    const std::size_t started = threads_.size();
    stop();
    throw Error(ErrorCode::kInternal, "cannot start thread " + std::to_string(started + 1) +
                                          " of " + std::to_string(threads) + ": " + e.what() +
                                          " (ask for fewer with --jobs)");
  }
}

ThreadPool::~ThreadPool() { stop(); }

void ThreadPool::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void ThreadPool::work() {
  while (true) {
    std::function<void()> job;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace ktune
