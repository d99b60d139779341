#include "daemon/import.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <filesystem>
#include <map>
#include <memory>

#include "base/text.h"
#include "http/client.h"
#include "daemon/options.h"
#include "daemon/service.h"
#include "ingest/csv_readings.h"
#include "ingest/line_readings.h"
#include "ingest/payload.h"
#include "ingest/write.h"
#include "json/parse.h"
#include "storage/store.h"

namespace readingsd::daemon {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kBlockBytes = 1 << 20;  // read at a time; a chunk is parsed once it holds this much
// No reading's line is this long: a file with none this far is damaged or not text (or has an
// unclosed quote), and is refused rather than read whole into memory.
constexpr std::size_t kMaxRecordBytes = 16 << 20;

// Where readings go: the store itself, or the running daemon that holds it.
class Sink {
 public:
  virtual ~Sink() = default;
  // Not OK: nothing after the last OK write is known to be stored; stop (and run again).
  // Readings the far side refuses are added to *refused.
  virtual Status Write(std::span<const storage::Reading> readings, std::vector<ingest::Rejection>* refused) = 0;
};

class StoreSink final : public Sink {
 public:
  explicit StoreSink(std::unique_ptr<storage::Store> store) : store_(std::move(store)) {}
  Status Write(std::span<const storage::Reading> readings, std::vector<ingest::Rejection>*) override {
    return ingest::WriteReadings(store_.get(), ingest::IngestHooks{}, readings);
  }

 private:
  std::unique_ptr<storage::Store> store_;
};

// A reading as the MQTT payload format writes it, its numbers digit for digit.
void AppendJson(const storage::Reading& r, std::string* out) {
  auto string = [](const std::string& s) {
    return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  *out += "{\"deviceId\":" + string(r.device_id) + ",\"readingTs\":\"" + r.sort_key + "\"";
  for (const storage::Attribute& a : r.attributes) {
    *out += "," + string(a.name) + ":";
    if (const auto* n = std::get_if<storage::Number>(&a.value)) {
      *out += n->text;
    } else if (const auto* s = std::get_if<std::string>(&a.value)) {
      *out += string(*s);
    } else {
      *out += std::get<bool>(a.value) ? "true" : "false";
    }
  }
  *out += "}";
}

class HttpSink final : public Sink {
 public:
  HttpSink(std::string host, std::string port, std::string token, std::size_t max_body, std::size_t max_readings)
      : host_(std::move(host)), port_(std::move(port)), token_(std::move(token)),
        max_body_(max_body - max_body / 10), max_readings_(max_readings) {}

  Status Write(std::span<const storage::Reading> readings, std::vector<ingest::Rejection>* refused) override {
    std::string body = "[", one;
    std::size_t in_body = 0;
    for (std::size_t i = 0; i <= readings.size(); ++i) {
      one.clear();
      if (i < readings.size()) AppendJson(readings[i], &one);
      const bool full = in_body > 0 && (i == readings.size() || in_body == max_readings_ ||
                                        body.size() + one.size() + 1 > max_body_);
      if (full) {
        body += "]";
        if (Status s = Post(std::move(body), refused); !s.ok()) return s;
        body = "[";
        in_body = 0;
      }
      if (i == readings.size()) break;
      body += (in_body++ ? "," : "") + one;
    }
    return Status::OK();
  }

 private:
  Status Post(std::string body, std::vector<ingest::Rejection>* refused) {
    http::HttpGetResult res;
    if (Status s = http::HttpPost(host_, port_, "/v1/readings", token_, "application/json", std::move(body),
                            std::chrono::seconds(60), &res);
        !s.ok()) {
      return s;
    }
    if (res.status == 204) return Status::OK();
    nlohmann::json answer;
    if ((res.status == 207 || res.status == 400) && ParseJson(res.body, &answer) == JsonParseError::kNone &&
        answer.contains("rejected")) {
      for (const auto& r : answer["rejected"]) {
        ingest::RejectReason reason = ingest::RejectReason::kMalformedJson;
        for (ingest::RejectReason each : ingest::kAllRejectReasons) {
          if (ingest::ReasonName(each) == r.value("reason", "")) reason = each;
        }
        refused->push_back({reason, "refused by the daemon: " + r.value("message", ""), "", 0});
      }
      return Status::OK();
    }
    return Status::Unavailable("the daemon answered HTTP " + std::to_string(res.status) + ": " + res.body.substr(0, 300));
  }

  const std::string host_, port_, token_;
  const std::size_t max_body_, max_readings_;
};

std::string Bytes(double n) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (n >= 1000 && u < 4) n /= 1000, ++u;
  char text[32];
  std::snprintf(text, sizeof text, u ? "%.1f %s" : "%.0f %s", n, units[u]);
  return text;
}

std::string Duration(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char text[32];
  if (s >= 3600) std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, s / 60 % 60);
  else if (s >= 60) std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  else std::snprintf(text, sizeof text, "%lds", s);
  return text;
}

// The progress line: redrawn in place on a terminal, a plain line now and then otherwise.
class Progress {
 public:
  Progress(uint64_t total_bytes, std::chrono::seconds every)
      : total_(total_bytes), tty_(isatty(STDERR_FILENO) == 1),
        every_(tty_ ? std::chrono::milliseconds(200) : std::chrono::duration_cast<std::chrono::milliseconds>(every)) {}

  void Update(uint64_t bytes, uint64_t readings, uint64_t refused) {
    const auto now = Clock::now();
    if (now - last_ < every_) return;
    last_ = now;
    std::fprintf(stderr, tty_ ? "\r\033[K%s" : "%s\n", Line(bytes, readings, refused).c_str());
    drawn_ = tty_;
  }
  void Done() {
    if (drawn_) std::fputs("\r\033[K", stderr);
  }
  double Seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  std::string Line(uint64_t bytes, uint64_t readings, uint64_t refused) const {
    const double seconds = std::max(Seconds(), 1e-3);
    std::string line = "import: " + std::to_string(readings) + " readings, " + std::to_string(refused) +
                       " refused, " + Bytes(static_cast<double>(bytes));
    if (total_ > 0) {
      line += " of " + Bytes(static_cast<double>(total_)) + " (" + std::to_string(100 * bytes / total_) + " %)";
    }
    line += ", " + std::to_string(static_cast<uint64_t>(static_cast<double>(readings) / seconds)) + " readings/s";
    if (total_ > 0 && bytes > 0 && bytes < total_) {
      line += ", ETA " + Duration(seconds * static_cast<double>(total_ - bytes) / static_cast<double>(bytes));
    }
    return line;
  }

  const uint64_t total_;
  const bool tty_;
  const std::chrono::milliseconds every_;
  const Clock::time_point start_ = Clock::now();
  Clock::time_point last_ = start_;
  bool drawn_ = false;
};

ImportFormat FormatOf(const std::string& file) {
  const std::string ext = std::filesystem::path(file).extension().string();
  if (ext == ".csv") return ImportFormat::kCsv;
  if (ext == ".jsonl" || ext == ".ndjson" || ext == ".json") return ImportFormat::kJsonLines;
  if (ext == ".lp" || ext == ".line" || ext == ".influx" || ext == ".txt") return ImportFormat::kLineProtocol;
  return ImportFormat::kByExtension;
}

// One import's state across files: what is read and counted, and the pending batch.
class Importer {
 public:
  Importer(const config::Config& config, const ImportOptions& options, Sink* sink, uint64_t total_bytes)
      : options_(options), sink_(sink), progress_(total_bytes, options.progress_every) {
    checks_ = IngestOptionsFrom(config.mqtt, config.ingest).payload;
    checks_.device_id_topic.clear();
    checks_.max_payload_bytes = checks_.max_batch = static_cast<std::size_t>(-1);
    line_.device_template = config.ingest.line_protocol_device;
    line_.precision = options.precision;
  }

  // Not OK when the sink failed or the file cannot be read: stop.
  Status File(const std::string& name, ImportFormat format) {
    std::ifstream file;
    std::istream* in = &std::cin;
    if (name != "-") {
      file.open(name, std::ios::binary);
      if (!file) return Status::IOError(name + ": cannot open");
      in = &file;
    }
    file_ = name;
    std::string buffer;
    std::size_t line = 1;  // of buffer's first byte
    ingest::CsvColumns columns;
    bool header = format != ImportFormat::kCsv;
    std::vector<char> block(kBlockBytes);
    for (bool at_end = false; !at_end;) {
      in->read(block.data(), static_cast<std::streamsize>(block.size()));
      const std::size_t got = static_cast<std::size_t>(in->gcount());
      if (in->bad()) {
        if (Status s = Written(); !s.ok()) return s;
        return Status::IOError(name + ": read failed");
      }
      at_end = got < block.size();
      buffer.append(block.data(), got);
      bytes_ += got;
      std::string_view rest = buffer;
      if (!header) {
        const std::size_t whole = ingest::WholeRecords(rest, at_end);
        if (whole == 0 && !at_end) {
          if (rest.size() > kMaxRecordBytes) return TooLong(line);
          continue;
        }
        std::size_t lines = 0;
        std::string_view head = rest.substr(0, whole);
        if (Status s = ingest::ParseCsvHeader(&head, &columns, &lines); !s.ok()) return Status::InvalidArgument(name + ": " + s.message());
        rest.remove_prefix(whole - head.size());
        line += lines;
        header = true;
      }
      std::size_t cut = format == ImportFormat::kCsv ? ingest::WholeRecords(rest, at_end)
                        : at_end                      ? rest.size()
                                                      : rest.rfind('\n') + 1;  // npos + 1 = 0
      if (cut == 0 && !at_end) {
        if (rest.size() > kMaxRecordBytes) return TooLong(line);
        buffer.erase(0, buffer.size() - rest.size());
        continue;
      }
      const std::string_view chunk = rest.substr(0, cut);
      Parse(format, columns, chunk, line);
      line += static_cast<std::size_t>(std::count(chunk.begin(), chunk.end(), '\n'));
      buffer.erase(0, buffer.size() - rest.size() + cut);
      if (Status s = Flush(false); !s.ok()) return s;
      progress_.Update(bytes_, written_, refused_);
    }
    return Flush(true);
  }

  // Stores what was read before the damage, then refuses the file.
  Status TooLong(std::size_t line) {
    if (Status s = Flush(true); !s.ok()) return s;
    return Status::InvalidArgument(file_ + ":" + std::to_string(line) + ": no line end within " +
                                   std::to_string(kMaxRecordBytes >> 20) +
                                   " MiB (a damaged or binary file, or an unclosed quote)");
  }

  // The summary on stdout: what was stored, and each reason refusals had.
  void Summary(std::size_t files) {
    progress_.Done();
    const double seconds = progress_.Seconds();
    std::printf("imported %llu readings from %zu file%s (%s) in %.1f s (%.0f readings/s)\n",
                static_cast<unsigned long long>(written_), files, files == 1 ? "" : "s",
                Bytes(static_cast<double>(bytes_)).c_str(), seconds, static_cast<double>(written_) / std::max(seconds, 1e-3));
    if (refused_ == 0) return;
    std::string reasons;
    for (const auto& [reason, n] : by_reason_) reasons += (reasons.empty() ? "" : ", ") + reason + " " + std::to_string(n);
    std::printf("refused %llu: %s\n", static_cast<unsigned long long>(refused_), reasons.c_str());
  }
  uint64_t refused() const { return refused_; }

 private:
  void Parse(ImportFormat format, const ingest::CsvColumns& columns, std::string_view chunk, std::size_t first_line) {
    ingest::ParsedMessage parsed;
    if (format == ImportFormat::kCsv) {
      ingest::ParseCsvRecords(checks_, options_.precision, columns, chunk, first_line, &parsed);
      Take(parsed, 0);
    } else if (format == ImportFormat::kLineProtocol) {
      ingest::ParseLineProtocol(checks_, line_, chunk, &parsed);
      // A chunk of comments alone holds no point; that is no refusal here.
      if (parsed.readings.empty() && parsed.rejections.size() == 1 &&
          parsed.rejections[0].reason == ingest::RejectReason::kEmptyBatch) {
        parsed.rejections.clear();
      }
      Take(parsed, first_line - 1);
    } else {
      std::size_t line = first_line;
      for (std::string_view rest = chunk; !rest.empty(); ++line) {
        const std::string_view text = rest.substr(0, rest.find('\n'));
        rest.remove_prefix(std::min(rest.size(), text.size() + 1));
        if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        ingest::ParsePayloadFor(checks_, "", text, &parsed);
        for (ingest::Rejection& r : parsed.rejections) r.index = line;
        Take(parsed, 0);
      }
    }
  }

  void Take(ingest::ParsedMessage& parsed, std::size_t line_offset) {
    for (ingest::Rejection& r : parsed.rejections) {
      r.index += line_offset;
      Refused(r);
    }
    for (storage::Reading& r : parsed.readings) pending_.push_back(std::move(r));
  }

  void Refused(const ingest::Rejection& r) {
    ++refused_;
    const std::string reason(ingest::ReasonName(r.reason));
    ++by_reason_[reason];
    constexpr uint64_t kShown = 10;
    if (refused_ <= kShown) {
      progress_.Done();
      std::fprintf(stderr, "import: %s%s: %s: %s\n", file_.c_str(),
                   r.index ? (":" + std::to_string(r.index)).c_str() : "", reason.c_str(), r.message.c_str());
      if (refused_ == kShown) std::fprintf(stderr, "import: further refusals are only counted\n");
    }
  }

  // Hands each whole batch to the sink, one write at a time on a thread of its own, so that
  // reading and parsing what follows takes the other core; `all`: the rest too, and waits.
  Status Flush(bool all) {
    while (pending_.size() >= options_.batch || (all && !pending_.empty())) {
      std::vector<storage::Reading> batch;
      if (pending_.size() <= options_.batch) {
        batch.swap(pending_);
      } else {
        const auto cut = pending_.begin() + static_cast<std::ptrdiff_t>(options_.batch);
        batch.assign(std::make_move_iterator(pending_.begin()), std::make_move_iterator(cut));
        pending_.erase(pending_.begin(), cut);
      }
      if (Status s = Written(); !s.ok()) return s;
      writing_ = std::async(std::launch::async, [this, batch = std::move(batch)] {
        Write w{.readings = batch.size()};
        w.status = sink_->Write(batch, &w.refused);
        return w;
      });
    }
    return all ? Written() : Status::OK();
  }

  // Waits for the write under way, if any, and counts what it stored and what was refused.
  Status Written() {
    if (!writing_.valid()) return Status::OK();
    Write w = writing_.get();
    if (!w.status.ok()) return w.status;
    written_ += w.readings - w.refused.size();
    for (const ingest::Rejection& r : w.refused) Refused(r);
    return Status::OK();
  }

  const ImportOptions& options_;
  Sink* const sink_;
  Progress progress_;
  ingest::PayloadOptions checks_;
  ingest::LineProtocolOptions line_;
  std::string file_;
  std::vector<storage::Reading> pending_;
  struct Write {
    std::size_t readings = 0;
    Status status;
    std::vector<ingest::Rejection> refused;
  };
  std::future<Write> writing_;
  uint64_t bytes_ = 0, written_ = 0, refused_ = 0;
  std::map<std::string, uint64_t> by_reason_;
};

}  // namespace

int Import(const config::Config& config, const ImportOptions& options) {
  uint64_t total = 0;  // bytes of every file, when each has a size
  bool sized = true;
  std::vector<ImportFormat> formats;
  for (const std::string& file : options.files) {
    ImportFormat format = options.format != ImportFormat::kByExtension ? options.format : FormatOf(file);
    if (format == ImportFormat::kByExtension) {
      std::fprintf(stderr, "readingsd import: %s: cannot tell the format from the name; give --format csv|jsonl|lp\n",
                   file.c_str());
      return kExitUsage;
    }
    formats.push_back(format);
    if (file == "-") {
      sized = false;
      continue;
    }
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(file, ec);
    if (ec) {
      std::fprintf(stderr, "readingsd import: %s: %s\n", file.c_str(), ec.message().c_str());
      return kExitIoErr;
    }
    // A pipe (a FIFO, or bash's <(zcat history.csv.gz)) has no size: no percentage then.
    if (std::filesystem::is_regular_file(status)) {
      total += std::filesystem::file_size(file, ec);
    } else {
      sized = false;
    }
  }
  if (!sized) total = 0;

  std::unique_ptr<Sink> sink;
  std::unique_ptr<storage::Store> store;
  Status opened = storage::Store::Open(StoreOptionsFrom(config), &store);
  if (opened.ok()) {
    sink = std::make_unique<StoreSink>(std::move(store));
  } else if (opened.code() == Status::Code::kBusy) {
    HostPort listen;
    if (!ParseHostPort(config.http.listen, &listen).ok()) {
      std::fprintf(stderr, "readingsd import: http.listen: expected host:port\n");
      return kExitConfig;
    }
    const std::string host = http::LoopbackFor(listen.host);
    std::fprintf(stderr, "import: a running daemon holds %s; importing through its HTTP API at %s:%u\n",
                 config.storage.data_dir.c_str(), host.c_str(), listen.port);
    sink = std::make_unique<HttpSink>(host, std::to_string(listen.port), options.token, config.http.max_body_bytes,
                                      config.http.max_write_readings);
  } else {
    std::fprintf(stderr, "readingsd import: storage: %s\n", opened.ToString().c_str());
    return ExitCodeFor(opened);
  }

  Importer importer(config, options, sink.get(), total);
  for (std::size_t i = 0; i < options.files.size(); ++i) {
    if (Status s = importer.File(options.files[i], formats[i]); !s.ok()) {
      importer.Summary(i);
      std::fprintf(stderr, "readingsd import: %s; what was imported before stays, %s\n", s.ToString().c_str(),
                   s.IsInvalidArgument() ? "fix the file and run it again" : "run it again to finish");
      return s.IsInvalidArgument() ? kExitDataErr : s.code() == Status::Code::kUnavailable ? kExitUnavailable : kExitIoErr;
    }
  }
  importer.Summary(options.files.size());
  return importer.refused() == 0 ? kExitOk : kExitDataErr;
}

}  // namespace readingsd::daemon
