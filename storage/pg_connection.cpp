// SPDX-License-Identifier: MIT
#include "storage/pg_connection.hpp"
#include "storage/pg_timeouts.hpp"

#include <endian.h>

#include <algorithm>
#include <iterator>
#include <cctype>
#include <charconv>
#include <cstring>
#include <thread>
#include <utility>

#include <libpq-fe.h>

namespace comb::storage {
namespace {

constexpr std::size_t max_kept_notices = 32;
// History SQL differs with a filter's shape; past this many texts a connection stops preparing
// new ones, so what the server keeps per connection stays bounded.
constexpr std::size_t max_prepared = 256;

std::string first_line(const char* text) {
  std::string line = text ? text : "";
  if (auto end = line.find('\n'); end != std::string::npos)
    line.erase(end);
  return line.empty() ? std::string("unknown database error") : line;
}

// SQLSTATE class 08 is "connection exception"; 57P01-57P03 are the server shutting down or
// terminating this backend (pg_terminate_backend). Both mean the connection is gone. 25006 (a
// write refused as read-only) means it is on a standby, or a primary demoted in a failover:
// dropped too, so the next statement reconnects to the server that takes writes now.
bool is_connection_sqlstate(const std::string& state) {
  return state.starts_with("08") || state == "57P01" || state == "57P02" || state == "57P03"
         || state == "25006";
}

std::string upper_trimmed(std::string_view sql) {
  while (!sql.empty() && (std::isspace(static_cast<unsigned char>(sql.front())) != 0))
    sql.remove_prefix(1);
  while (!sql.empty()
         && (std::isspace(static_cast<unsigned char>(sql.back())) != 0 || sql.back() == ';'))
    sql.remove_suffix(1);
  std::string out(sql.size() <= 16 ? sql : sql.substr(0, 16));
  for (char& c : out)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool is_rollback(std::string_view sql) {
  auto word = upper_trimmed(sql);
  return word == "ROLLBACK" || word == "ABORT";
}

bool ends_transaction(std::string_view sql) {
  auto word = upper_trimmed(sql);
  return is_rollback(sql) || word == "COMMIT" || word == "END";
}

/// Lengths and formats of a statement's parameters: empty (all text) unless some are binary.
struct param_formats {
  std::vector<int> lengths, formats;

  param_formats(const pg_params& params, const std::vector<bool>& binary) {
    for (std::size_t i = 0; i < binary.size() && i < params.size(); ++i) {
      if (lengths.empty()) {
        lengths.assign(params.size(), 0);
        formats.assign(params.size(), 0);
      }
      formats[i] = binary[i] ? 1 : 0;
      lengths[i] = params[i] ? static_cast<int>(params[i]->size()) : 0;
    }
  }
  [[nodiscard]] const int* length_data() const { return lengths.empty() ? nullptr : lengths.data(); }
  [[nodiscard]] const int* format_data() const { return formats.empty() ? nullptr : formats.data(); }
};

/// A pipelined statement's parameters: none when it names none.
const pg_params& params_of(const pg_connection::pipelined& statement) {
  static const pg_params none;
  return statement.params ? *statement.params : none;
}

/// libpq's view of the parameters: null for SQL NULL; valid while `params` lives.
std::vector<const char*> param_values(const pg_params& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& param : params)
    values.push_back(param ? param->c_str() : nullptr);
  return values;
}

} // namespace

// -- pg_reply -----------------------------------------------------------------

void pg_reply::deleter::operator()(::pg_result* result) const noexcept {
  PQclear(result);
}

int pg_reply::rows() const noexcept {
  return result_ ? PQntuples(result_.get()) : 0;
}

bool pg_reply::is_null(int row, int column) const noexcept {
  return !result_ || PQgetisnull(result_.get(), row, column) != 0;
}

std::string_view pg_reply::text(int row, int column) const noexcept {
  // A NULL's value is "" with length 0 already: no third look-up (each checks the row and
  // column, and every field of a history page is read here).
  if (!result_)
    return {};
  return {PQgetvalue(result_.get(), row, column),
          static_cast<std::size_t>(PQgetlength(result_.get(), row, column))};
}

std::int64_t pg_reply::binary_integer(int row, int column) const noexcept {
  std::string_view field = text(row, column);
  if (field.size() == 8) { // bigint, the common case
    std::uint64_t word = 0;
    std::memcpy(&word, field.data(), sizeof word);
    return static_cast<std::int64_t>(be64toh(word));
  }
  if (field.size() == 4) { // an xid or an integer
    std::uint32_t word = 0;
    std::memcpy(&word, field.data(), sizeof word);
    return static_cast<std::int64_t>(be32toh(word));
  }
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < field.size() && i < sizeof value; ++i)
    value = (value << 8) | static_cast<unsigned char>(field[i]);
  return static_cast<std::int64_t>(value);
}

std::int64_t pg_reply::integer(int row, int column) const noexcept {
  std::string_view field = text(row, column);
  std::int64_t value = 0;
  std::from_chars(field.data(), field.data() + field.size(), value);
  return value;
}

std::uint64_t pg_reply::affected_rows() const noexcept {
  if (!result_)
    return 0;
  const char* tuples = PQcmdTuples(result_.get());
  std::uint64_t value = 0;
  std::from_chars(tuples, tuples + std::char_traits<char>::length(tuples), value);
  return value;
}

// -- pg_connection ------------------------------------------------------------

pg_connection::pg_connection(std::string conninfo, pg_reconnect_policy policy)
  : conninfo_(std::move(conninfo)), policy_(policy) {}

pg_connection::~pg_connection() {
  drop_connection();
}

void pg_connection::on_notice(void* self, const char* message) {
  auto& notices = static_cast<pg_connection*>(self)->notices_;
  if (notices.size() >= max_kept_notices)
    notices.erase(notices.begin());
  notices.push_back(first_line(message));
}

void pg_connection::drop_connection() {
  {
    std::lock_guard lock(cancel_mutex_);
    if (cancel_)
      PQfreeCancel(cancel_);
    cancel_ = nullptr;
  }
  if (conn_)
    PQfinish(conn_);
  conn_ = nullptr;
  prepared_.clear();
  generic_plans_ = false;
}

std::optional<std::string> pg_connection::connect_once() {
  drop_connection();
  auto [conn, settled_for_any] = open_chosen_link(conninfo_, policy_.servers);
  if (!conn)
    return "out of memory while connecting to the database";
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string error = first_line(PQerrorMessage(conn));
    PQfinish(conn);
    return error;
  }
  PQsetNoticeProcessor(conn, &pg_connection::on_notice, this);
  // Events are UTF-8 (Boost.JSON refuses anything else); make the server agree.
  if (PQsetClientEncoding(conn, "UTF8") != 0) {
    std::string error = first_line(PQerrorMessage(conn));
    PQfinish(conn);
    return error;
  }
  std::string set;
  if (policy_.statement_timeout_ms > 0)
    set += "SET statement_timeout = " + std::to_string(policy_.statement_timeout_ms) + ";";
  if (policy_.lock_timeout_ms > 0)
    set += "SET lock_timeout = " + std::to_string(policy_.lock_timeout_ms) + ";";
  if (!set.empty()) {
    ::pg_result* result = PQexec(conn, set.c_str());
    bool applied = result && PQresultStatus(result) == PGRES_COMMAND_OK;
    std::string error = applied ? std::string() : first_line(PQerrorMessage(conn));
    PQclear(result);
    if (!applied) {
      PQfinish(conn);
      return error;
    }
  }
  conn_ = conn;
  in_transaction_ = false;
  ++connect_count_;
  settled_for_any_at_.reset();
  if (settled_for_any)
    settled_for_any_at_ = std::chrono::steady_clock::now();
  std::lock_guard lock(cancel_mutex_);
  cancel_ = PQgetCancel(conn_);
  return std::nullopt;
}

pg_reply must(pg_reply reply, const char* step) {
  if (!reply.ok())
    throw statement_failed(std::string(step) + ": " + reply.error());
  return reply;
}

bool pg_connection::connected() const noexcept {
  return conn_ && PQstatus(conn_) == CONNECTION_OK;
}

std::optional<std::string> pg_connection::ensure_connected() {
  if (connected() && !in_transaction_ && settled_for_any_at_
      && std::chrono::steady_clock::now() - *settled_for_any_at_ >= policy_.writable_recheck)
    drop_connection(); // a writable server may be back: a reader on a standby reads the past
  if (connected()) {
    // A backend terminated while we were idle has already sent its FATAL message and closed
    // the socket; reading it now turns the status bad, so we reconnect instead of failing the
    // next statement.
    if (in_transaction_ || (PQconsumeInput(conn_) == 1 && connected()))
      return std::nullopt;
  }
  auto backoff = policy_.first_backoff;
  std::optional<std::string> error;
  for (int attempt = 0; attempt < std::max(1, policy_.attempts); ++attempt) {
    if (attempt > 0) {
      std::this_thread::sleep_for(backoff);
      backoff *= 2;
    }
    error = connect_once();
    if (!error)
      return std::nullopt;
  }
  return error;
}

void pg_connection::lose_connection(bool ends_transaction) {
  if (in_transaction_ && !ends_transaction)
    transaction_lost_ = true;
  in_transaction_ = false;
  drop_connection();
}

std::optional<pg_reply> pg_connection::refuse_statement(std::string_view sql) {
  const bool ending = ends_transaction(sql);
  if (!transaction_lost_ && in_transaction_ && !connected())
    lose_connection(ending);
  else if (!transaction_lost_)
    return std::nullopt;
  pg_reply reply;
  reply.connection_lost_ = true;
  if (ending) {
    transaction_lost_ = false;
    if (is_rollback(sql))
      return reply; // rolling back a transaction that died with its connection succeeds
  }
  reply.error_ = ending ? "the database connection was lost; the transaction did not commit"
                        : "the database connection was lost during this transaction";
  return reply;
}

pg_reply pg_connection::wrap(::pg_result* raw, bool ends_transaction) {
  pg_reply reply;
  reply.result_.reset(raw);
  ExecStatusType status = raw ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
  bool succeeded = status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK
                   || status == PGRES_EMPTY_QUERY;
  if (!succeeded) {
    const char* state = raw ? PQresultErrorField(raw, PG_DIAG_SQLSTATE) : nullptr;
    reply.sqlstate_ = state ? state : "";
    count_timeout(reply.sqlstate_);
    reply.error_ = first_line(raw ? PQresultErrorMessage(raw) : PQerrorMessage(conn_));
    if (reply.error_.starts_with("ERROR:  "))
      reply.error_.erase(0, 8);
    reply.connection_lost_ = !connected() || is_connection_sqlstate(reply.sqlstate_);
  }
  if (reply.connection_lost_) {
    lose_connection(ends_transaction);
  } else {
    PGTransactionStatusType tx = PQtransactionStatus(conn_);
    in_transaction_ = tx == PQTRANS_INTRANS || tx == PQTRANS_INERROR || tx == PQTRANS_ACTIVE;
  }
  return reply;
}

std::optional<pg_reply> pg_connection::before_statement(std::string_view sql) {
  if (auto refused = refuse_statement(sql))
    return refused;
  if (auto error = ensure_connected()) {
    pg_reply reply;
    reply.error_ = *error;
    reply.connection_lost_ = true;
    return reply;
  }
  return std::nullopt;
}

std::variant<std::string, pg_reply> pg_connection::prepared_name(const std::string& text,
                                                                std::size_t param_count) {
  if (param_count == 0)
    return std::string();
  if (auto it = prepared_.find(text); it != prepared_.end())
    return it->second;
  if (prepared_.size() >= max_prepared)
    return std::string();
  std::string name = "comb_" + std::to_string(++prepared_count_);
  pg_reply reply = wrap(PQprepare(conn_, name.c_str(), text.c_str(), static_cast<int>(param_count),
                                  nullptr),
                        false);
  if (!reply.ok())
    return reply;
  prepared_.emplace(text, name);
  return name;
}

bool pg_connection::is_stale(const pg_reply& reply) noexcept {
  // 26000: the name is gone (a DISCARD ALL, a pooler's new backend); 0A000: "cached plan must
  // not change result type" after a schema change.
  return !reply.ok() && (reply.sqlstate() == "26000" || reply.sqlstate() == "0A000");
}

void pg_connection::forget_if_stale(const std::string& text, const pg_reply& reply) {
  if (is_stale(reply))
    prepared_.erase(text); // prepared again on the next use
}

std::variant<pg_connection::ready_statement, pg_reply>
pg_connection::ready(std::string_view sql, const pg_params& params, bool generic_plan,
                     bool defer_switch) {
  if (auto not_ready = before_statement(sql))
    return std::move(*not_ready);
  const bool switching = generic_plan != generic_plans_ && !in_transaction_;
  if (switching && !defer_switch)
    if (auto failed = use_generic_plans(generic_plan))
      return std::move(*failed);
  ready_statement statement{std::string(sql), param_values(params), {}, switching && defer_switch};
  auto name = prepared_name(statement.text, statement.values.size());
  if (auto* failed = std::get_if<pg_reply>(&name))
    return std::move(*failed);
  statement.prepared = std::move(std::get<std::string>(name));
  if (statement.switch_plans && statement.prepared.empty()) {
    // Sent unprepared (no parameters, or past max_prepared): switch the usual way first.
    statement.switch_plans = false;
    if (auto failed = use_generic_plans(generic_plan))
      return std::move(*failed);
  }
  return statement;
}

pg_reply pg_connection::exec(std::string_view sql, const pg_params& params, bool generic_plan) {
  return exec_with(sql, params, pg_formats{generic_plan, {}, false});
}

pg_reply pg_connection::exec(std::string_view sql, const pg_params& params,
                             const std::vector<bool>& binary) {
  return exec_with(sql, params, pg_formats{false, binary, false});
}

pg_reply pg_connection::exec_with(std::string_view sql, const pg_params& params,
                                  const pg_formats& formats) {
  auto reply = exec_once(sql, params, formats);
  // Outside a transaction a stale prepared statement changed nothing: prepare it again, once
  // (a pooler handing every statement to another backend would fail it forever).
  if (is_stale(reply) && !in_transaction_)
    return exec_once(sql, params, formats);
  return reply;
}

pg_reply pg_connection::exec_once(std::string_view sql, const pg_params& params,
                                  const pg_formats& formats) {
  auto readied = ready(sql, params, formats.generic_plan, true);
  if (auto* refused = std::get_if<pg_reply>(&readied))
    return std::move(*refused);
  const auto& s = std::get<ready_statement>(readied);
  if (s.switch_plans)
    return exec_switching_plans(sql, params, formats, s);
  // Lengths and formats only matter for binary parameters; all-text statements pass none.
  const param_formats format(params, formats.binary_params);
  const int rows_format = formats.binary_rows ? 1 : 0;
  auto reply = wrap(s.prepared.empty()
                      ? PQexecParams(conn_, s.text.c_str(), s.count(), nullptr, s.values.data(),
                                     format.length_data(), format.format_data(), rows_format)
                      : PQexecPrepared(conn_, s.prepared.c_str(), s.count(), s.values.data(),
                                       format.length_data(), format.format_data(), rows_format),
                    ends_transaction(sql));
  forget_if_stale(s.text, reply);
  return reply;
}

pg_reply pg_connection::exec_switching_plans(std::string_view sql, const pg_params& params,
                                             const pg_formats& formats,
                                             const ready_statement& s) {
  const bool generic = formats.generic_plan;
  // With mixed traffic a reader switches modes at every other REQ (`#e` or `#p` with one value
  // runs its generic plan, the other shapes stay on auto); sent alone the SET was a round trip
  // of its own each time. In a pipeline it goes with the statement.
  const std::string_view set = generic ? "SET plan_cache_mode = force_generic_plan"
                                       : "SET plan_cache_mode = auto";
  const ready_statement set_statement{std::string(set), {}, {}, false};
  auto replies = send_pipeline({pipelined{set, nullptr, {}},
                                pipelined{sql, &params, formats.binary_params, formats.binary_rows}},
                               {set_statement, s});
  // Both ran in the pipeline's one implicit transaction: a failed statement rolled the SET back.
  if (replies[0].ok() && replies[1].ok() && connected())
    generic_plans_ = generic;
  return std::move(replies[replies[0].ok() ? 1 : 0]);
}

/// `count` replies failing as `like` does (its rows, if any, are not copied).
std::vector<pg_reply> pg_connection::all_failing(std::size_t count, const pg_reply& like) {
  std::vector<pg_reply> replies(count);
  for (auto& reply : replies) {
    reply.error_ = like.error_;
    reply.sqlstate_ = like.sqlstate_;
    reply.connection_lost_ = like.connection_lost_;
  }
  return replies;
}

std::vector<pg_reply> pg_connection::exec_pipeline(const std::vector<pipelined>& statements,
                                                   bool generic_plan) {
  std::vector<ready_statement> ready_ones;
  for (const auto& statement : statements) {
    // Refusal, connection, plan mode and preparation, each a round trip of its own only the
    // first time; the statements themselves then go together.
    auto readied = ready(statement.sql, params_of(statement),
                         generic_plan);
    if (auto* refused = std::get_if<pg_reply>(&readied))
      return all_failing(statements.size(), *refused);
    ready_ones.push_back(std::move(std::get<ready_statement>(readied)));
  }
  return send_pipeline(statements, ready_ones);
}

std::vector<pg_reply> pg_connection::send_pipeline(const std::vector<pipelined>& statements,
                                                   const std::vector<ready_statement>& ready) {
  std::vector<pg_reply> replies;
  // Whether an explicit transaction is open after the replies read so far: until the pipeline's
  // end libpq reports every transaction as active, and a COMMIT read is made whatever comes
  // after it, so a loss after it loses no transaction.
  bool explicit_open = in_transaction_;
  // The replies that stand if the connection is lost: those up to the last explicit end of a
  // transaction read (a COMMIT read is made). What came after ran in a transaction the loss
  // left unknown (the pipeline's implicit one commits at its end), and fails as lost.
  std::size_t standing = 0;
  auto lost = [&] {
    if (conn_ && PQpipelineStatus(conn_) != PQ_PIPELINE_OFF)
      (void)PQexitPipelineMode(conn_);
    pg_reply reply = wrap(nullptr, false);
    reply.connection_lost_ = true;
    if (connected())
      lose_connection(false); // the pipeline's state is unknown: never reuse this connection
    replies.resize(standing); // never more than were read
    auto failing = all_failing(statements.size() - replies.size(), reply);
    std::move(failing.begin(), failing.end(), std::back_inserter(replies));
    return std::move(replies);
  };
  if (PQenterPipelineMode(conn_) != 1)
    return lost();
  for (std::size_t i = 0; i < statements.size(); ++i) {
    const auto& s = ready[i];
    const param_formats format(params_of(statements[i]),
                               statements[i].binary);
    const int rows_format = statements[i].binary_rows ? 1 : 0;
    int sent = s.prepared.empty()
                 ? PQsendQueryParams(conn_, s.text.c_str(), s.count(), nullptr, s.values.data(),
                                     format.length_data(), format.format_data(), rows_format)
                 : PQsendQueryPrepared(conn_, s.prepared.c_str(), s.count(), s.values.data(),
                                       format.length_data(), format.format_data(), rows_format);
    if (sent != 1)
      return lost();
  }
  if (PQpipelineSync(conn_) != 1)
    return lost();
  for (std::size_t i = 0; i < statements.size(); ++i) {
    ::pg_result* raw = PQgetResult(conn_);
    if (!raw)
      return lost();
    while (::pg_result* extra = PQgetResult(conn_)) // each statement's results end with NULL
      PQclear(extra);
    replies.push_back(wrap(raw, false));
    if (replies.back().ok() && ends_transaction(statements[i].sql)) {
      explicit_open = false;
      standing = replies.size();
    } else if (replies.back().ok() && upper_trimmed(statements[i].sql) == "BEGIN") {
      explicit_open = true;
    }
    if (!conn_)
      return lost();
    in_transaction_ = explicit_open;
    forget_if_stale(ready[i].text, replies.back());
  }
  ::pg_result* sync = PQgetResult(conn_);
  const bool synced = sync && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
  PQclear(sync);
  if (!synced || PQexitPipelineMode(conn_) != 1)
    return lost();
  PGTransactionStatusType tx = PQtransactionStatus(conn_);
  in_transaction_ = tx == PQTRANS_INTRANS || tx == PQTRANS_INERROR;
  return replies;
}

std::optional<pg_reply> pg_connection::use_generic_plans(bool generic) {
  if (generic == generic_plans_ || in_transaction_)
    return std::nullopt;
  auto set = wrap(PQexec(conn_, generic ? "SET plan_cache_mode = force_generic_plan"
                                        : "SET plan_cache_mode = auto"),
                  false);
  if (!set.ok())
    return set;
  generic_plans_ = generic;
  return std::nullopt;
}

pg_reply pg_connection::exec_script(std::string_view constant_sql) {
  if (auto not_ready = before_statement(constant_sql))
    return std::move(*not_ready);
  const std::string text(constant_sql);
  return wrap(PQexec(conn_, text.c_str()), ends_transaction(constant_sql));
}

pg_reply pg_connection::copy_in(std::string_view constant_sql, std::string_view data) {
  if (auto not_ready = before_statement(constant_sql))
    return std::move(*not_ready);
  const std::string text(constant_sql);
  ::pg_result* started = PQexec(conn_, text.c_str());
  if (!started || PQresultStatus(started) != PGRES_COPY_IN)
    return wrap(started, false);
  PQclear(started);
  // Blocking connection: PQputCopyData queues or sends everything, or fails on a broken link;
  // either way the COPY's own result (its error, if any) comes from PQgetResult.
  if (PQputCopyData(conn_, data.data(), static_cast<int>(data.size())) == 1)
    (void)PQputCopyEnd(conn_, nullptr);
  else
    (void)PQputCopyEnd(conn_, "comb: could not send the COPY data");
  ::pg_result* last = nullptr;
  while (::pg_result* next = PQgetResult(conn_)) {
    if (last)
      PQclear(last);
    last = next;
  }
  return wrap(last, false);
}

bool pg_connection::cancel() {
  std::lock_guard lock(cancel_mutex_);
  if (!cancel_)
    return false;
  char error[256];
  return PQcancel(cancel_, error, sizeof error) == 1;
}

int pg_connection::backend_pid() const noexcept {
  return connected() ? PQbackendPID(conn_) : 0;
}

std::vector<std::string> pg_connection::take_notices() {
  return std::exchange(notices_, {});
}

} // namespace comb::storage
