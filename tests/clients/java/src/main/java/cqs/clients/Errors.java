package cqs.clients;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.UndeclaredThrowableException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** The exception a caller meant, out of the wrappers reflection and futures put around it. */
final class Errors {
  private Errors() {}

  static Throwable unwrap(Throwable error) {
    Throwable current = error;
    while ((current instanceof InvocationTargetException
            || current instanceof UndeclaredThrowableException
            || current instanceof CompletionException
            || current instanceof ExecutionException)
        && current.getCause() != null) {
      current = current.getCause();
    }
    return current;
  }
}
