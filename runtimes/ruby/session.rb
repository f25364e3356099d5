control = STDIN
entry, stdin_path, status_path = ARGV.last(3)
ARGV.clear
$0 = entry
until (line = control.gets).nil?
  # `once`: run the program as ruby would (stdin is what follows) and end.
  once = line.strip == "once"
  unless once
    input = File.open(stdin_path)
    $stdin = input
    Object.send(:remove_const, :STDIN)
    Object.const_set(:STDIN, input)
  end
  status = begin
    TOPLEVEL_BINDING.eval(File.read(entry), entry, 1)
    0
  rescue SystemExit => e
    e.status
  rescue Exception => e
    e.set_backtrace(e.backtrace.take_while { |frame| !frame.start_with?("-e:") }) if e.backtrace
    $stderr.write(e.full_message(highlight: false))
    1
  end
  $stdout.flush
  $stderr.flush
  exit(status) if once
  input.close
  File.write(status_path, status.to_s)
end
