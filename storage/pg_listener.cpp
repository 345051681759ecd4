// SPDX-License-Identifier: MIT
#include "storage/pg_listener.hpp"

#include <boost/asio/post.hpp>
#include <libpq-fe.h>

#include "storage/pg_connection.hpp"

namespace comb::storage {
namespace asio = boost::asio;

namespace {

constexpr std::chrono::milliseconds first_backoff{100};
constexpr std::chrono::milliseconds max_backoff{2000};
constexpr std::chrono::seconds connect_timeout{5};

// Server messages outside a query (the FATAL of a terminated backend) would go to stderr; the
// failure itself is seen through the connection status, and logged by whoever reads problem().
void ignore_notice(void*, const char*) {}

std::string first_line(const char* text) {
  std::string line = text ? text : "";
  if (auto end = line.find('\n'); end != std::string::npos)
    line.erase(end);
  return line.empty() ? std::string("connection lost") : line;
}

} // namespace

pg_listener::pg_listener(asio::io_context& io, std::string conninfo, std::string channel,
                         pg_listener_events events)
  : strand_(asio::make_strand(io)),
    socket_(strand_),
    timer_(strand_),
    conninfo_(std::move(conninfo)),
    channel_(std::move(channel)),
    events_(std::move(events)) {}

pg_listener::~pg_listener() {
  close_connection();
}

void pg_listener::start() {
  asio::post(strand_, [self = shared_from_this()] { self->connect(); });
}

void pg_listener::stop() {
  asio::post(strand_, [self = shared_from_this()] {
    self->stopped_ = true;
    self->timer_.cancel();
    self->close_connection();
  });
}

std::string pg_listener::problem() const {
  std::lock_guard lock(problem_mutex_);
  return problem_;
}

void pg_listener::set_problem(std::string problem) {
  std::lock_guard lock(problem_mutex_);
  problem_ = std::move(problem);
}

void pg_listener::close_connection() {
  boost::system::error_code ignored;
  if (socket_.is_open()) {
    socket_.cancel(ignored);
    (void)socket_.release(); // libpq owns the fd
  }
  if (conn_)
    PQfinish(conn_);
  conn_ = nullptr;
  listening_ = false;
  heartbeat_due_ = false;
  backend_pid_ = 0;
  ++generation_;
}

bool pg_listener::rewatch_socket() {
  boost::system::error_code ec;
  if (socket_.is_open()) {
    socket_.cancel(ec);
    (void)socket_.release();
  }
  int fd = PQsocket(conn_);
  if (fd < 0)
    return false;
  socket_.assign(fd, ec);
  return !ec;
}

void pg_listener::fail(const std::string& why) {
  if (stopped_)
    return;
  set_problem("postgres: " + why);
  close_connection();
  timer_.expires_after(backoff_);
  backoff_ = std::min(backoff_ * 2, max_backoff);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec && !self->stopped_)
      self->connect();
  });
}

void pg_listener::connect() {
  close_connection();
  conn_ = open_link_checked(conninfo_, true);
  if (!conn_ || PQstatus(conn_) == CONNECTION_BAD) {
    fail(conn_ ? first_line(PQerrorMessage(conn_)) : "out of memory");
    return;
  }
  PQsetNoticeProcessor(conn_, &ignore_notice, nullptr);
  // A connect that hangs (a firewalled address) is given up and tried again.
  auto generation = generation_;
  timer_.expires_after(connect_timeout);
  timer_.async_wait([self = shared_from_this(), generation](const boost::system::error_code& ec) {
    if (!ec && self->generation_ == generation && !self->listening_)
      self->fail("connect timed out");
  });
  wait_connect(PGRES_POLLING_WRITING);
}

void pg_listener::wait_connect(int poll_status) {
  if (poll_status == PGRES_POLLING_OK) {
    after_connect();
    return;
  }
  if (poll_status == PGRES_POLLING_FAILED || !rewatch_socket()) {
    fail(first_line(PQerrorMessage(conn_)));
    return;
  }
  auto wait = poll_status == PGRES_POLLING_READING ? asio::posix::stream_descriptor::wait_read
                                                   : asio::posix::stream_descriptor::wait_write;
  socket_.async_wait(wait, [self = shared_from_this(), generation = generation_](
                             const boost::system::error_code& ec) {
    if (ec || self->generation_ != generation || self->stopped_)
      return;
    self->wait_connect(PQconnectPoll(self->conn_));
  });
}

void pg_listener::after_connect() {
  if (PQsetnonblocking(conn_, 1) != 0) {
    fail(first_line(PQerrorMessage(conn_)));
    return;
  }
  // The channel name is a constant of the program, never outside input.
  std::string listen = "LISTEN " + channel_;
  if (PQsendQuery(conn_, listen.c_str()) != 1 || PQflush(conn_) < 0) {
    fail(first_line(PQerrorMessage(conn_)));
    return;
  }
  backend_pid_ = PQbackendPID(conn_);
  wait_readable();
}

// A connection to a server that froze, or behind a proxy or network that stopped forwarding
// without closing, stays open and brings nothing: no notification, no error, while /readyz says
// all is well and every other pod's change goes unseen here. An empty query every few seconds
// must come back before the next, or the connection is dropped and made again.
void pg_listener::beat() {
  timer_.expires_after(heartbeat_interval);
  timer_.async_wait([self = shared_from_this(), generation = generation_](const boost::system::error_code& ec) {
    if (ec || self->generation_ != generation || self->stopped_)
      return;
    // An answer that came while this thread was busy elsewhere may wait unread behind this
    // timer: read what is there before judging.
    if (self->heartbeat_due_ && !self->drain())
      return;
    if (self->heartbeat_due_) {
      self->fail("no answer to a heartbeat within " + std::to_string(heartbeat_interval.count()) + " s");
      return;
    }
    if (PQsendQuery(self->conn_, "") != 1 || PQflush(self->conn_) < 0) {
      self->fail(first_line(PQerrorMessage(self->conn_)));
      return;
    }
    self->heartbeat_due_ = true;
    self->beat();
  });
}

void pg_listener::wait_readable() {
  socket_.async_wait(asio::posix::stream_descriptor::wait_read,
                     [self = shared_from_this(), generation = generation_](
                       const boost::system::error_code& ec) {
                       if (ec || self->generation_ != generation || self->stopped_)
                         return;
                       self->on_readable();
                     });
}

void pg_listener::on_readable() {
  if (drain())
    wait_readable();
}

bool pg_listener::drain() {
  if (PQconsumeInput(conn_) != 1 || PQstatus(conn_) != CONNECTION_OK) {
    fail(first_line(PQerrorMessage(conn_)));
    return false;
  }
  while (PQisBusy(conn_) == 0) {
    PGresult* result = PQgetResult(conn_);
    if (!result)
      break;
    const bool heartbeat = PQresultStatus(result) == PGRES_EMPTY_QUERY;
    bool ok = PQresultStatus(result) == PGRES_COMMAND_OK || heartbeat;
    std::string error = ok ? "" : first_line(PQresultErrorMessage(result));
    PQclear(result);
    if (!ok) {
      fail(error);
      return false;
    }
    if (heartbeat)
      heartbeat_due_ = false;
    if (!listening_) {
      listening_ = true;
      backoff_ = first_backoff;
      ++listen_count_;
      set_problem("");
      beat();
      if (events_.listening)
        events_.listening();
    }
  }
  while (PGnotify* notice = PQnotifies(conn_)) {
    std::string payload = notice->extra ? notice->extra : "";
    PQfreemem(notice);
    if (events_.notified)
      events_.notified(std::move(payload));
  }
  return true;
}

} // namespace comb::storage
