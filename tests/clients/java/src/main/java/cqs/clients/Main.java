package cqs.clients;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The one JVM that runs every Java driver: `java cqs.clients.Main '{"driver": plan, ...}'`.
 *
 * <p>Each named driver runs on its own thread (they are independent: each has its own queues),
 * so the JVM starts once and the drivers' waits overlap. Every line printed is one JSON object
 * {"driver", "step", ...} with what that step observed, or {"driver", "step", "error"}; nothing
 * is judged here (tests/clients/test_java_sdks.py does, with scenario.py's checks).
 */
public final class Main {
  static final ObjectMapper JSON = new ObjectMapper();

  /** Where a driver reports its steps: one JSON line each, tagged with the driver's name. */
  public static final class Report {
    private final String driver;

    Report(String driver) {
      this.driver = driver;
    }

    public void emit(String step, Map<String, Object> observed) {
      Map<String, Object> line = new LinkedHashMap<>();
      line.put("driver", driver);
      line.put("step", step);
      line.putAll(observed);
      print(line);
    }

    /** Runs one step; an exception is reported as that step's error and the next step runs. */
    public void step(String step, Step body) {
      long started = System.nanoTime();
      try {
        Map<String, Object> observed = new LinkedHashMap<>(body.run());
        observed.put("seconds", (System.nanoTime() - started) / 1e9);
        emit(step, observed);
      } catch (Throwable error) {
        Throwable cause = Errors.unwrap(error);
        emit(step, Map.of("error", cause.getClass().getSimpleName() + ": " + cause.getMessage()));
      }
    }
  }

  /** A step: what it observed, by name. */
  @FunctionalInterface
  public interface Step {
    Map<String, Object> run() throws Exception;
  }

  static synchronized void print(Map<String, Object> line) {
    try {
      System.out.println(JSON.writeValueAsString(line));
      System.out.flush();
    } catch (Exception error) {
      throw new IllegalStateException(error);
    }
  }

  @SuppressWarnings("unchecked")
  public static void main(String[] args) throws Exception {
    Map<String, Map<String, Object>> plans = JSON.readValue(args[0], Map.class);
    List<Thread> threads = new ArrayList<>();
    for (Map.Entry<String, Map<String, Object>> entry : plans.entrySet()) {
      String name = entry.getKey();
      Map<String, Object> plan = entry.getValue();
      Report report = new Report(name);
      Runnable driver = switch (name) {
        case "v2-sync" -> () -> new V2Scenario(V2.sync(plan, report), plan, report).run();
        case "v2-async" -> () -> new V2Scenario(V2.async(plan, report), plan, report).run();
        case "v1" -> () -> new V1Scenario(plan, report).run();
        case "jms" -> () -> new JmsDriver(plan, report).run();
        case "spring" -> () -> SpringDriver.run(plan, report);
        default -> throw new IllegalArgumentException("no driver " + name);
      };
      Thread thread = new Thread(() -> {
        long started = System.nanoTime();
        try {
          driver.run();
          report.emit("finished", Map.of("seconds", (System.nanoTime() - started) / 1e9));
        } catch (Throwable error) {
          Throwable cause = Errors.unwrap(error);
          report.emit("driver", Map.of("error", cause.getClass().getSimpleName() + ": " + cause.getMessage()));
        }
      }, name);
      thread.start();
      threads.add(thread);
    }
    for (Thread thread : threads) {
      thread.join();
    }
    // Spring's and the SDKs' non-daemon threads must not keep the JVM alive.
    System.exit(0);
  }
}
