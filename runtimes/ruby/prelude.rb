# Loaded before every ruby program (`-r`), with ruby started as `--disable-gems`.
#
# RubyGems, did_you_mean and error_highlight are most of ruby's start here (about 85 ms
# of a hello's 120, read file by file through WASI), and this build installs no gem. So
# they load when first needed, and a program sees what it would with them loaded at
# start: `Gem` and `gem` load RubyGems; the first error message asked for (an uncaught
# error's, or `full_message`/`detailed_message`) loads the two that annotate it, then is
# written by them. syntax_suggest is left out: it needs a thread (Timeout), which this
# build cannot start, and its failure replaced every syntax error's message with just
# "main.rb: SyntaxError".

# stdout and stderr keep their order (the build's own `.rubyopts.rb` did only this).
$stdout.sync = true

Object.autoload(:Gem, "rubygems")

module Kernel
  private def gem(*args, **options)
    require "rubygems" # redefines Kernel#gem
    gem(*args, **options)
  end
end

module RunboxErrorMessages
  ANNOTATORS = %w[error_highlight did_you_mean].freeze
  @loaded = false

  def self.load_annotators
    return false if @loaded

    @loaded = true
    ANNOTATORS.each do |feature|
      require feature
    rescue LoadError
      nil
    end
    true
  end

  def detailed_message(**options)
    # Once loaded, their modules sit in front of this one: dispatch again to reach them.
    return detailed_message(**options) if RunboxErrorMessages.load_annotators

    super
  end
end

# The classes those libraries annotate.
[NameError, KeyError, LoadError, NoMatchingPatternKeyError, TypeError, ArgumentError].each do |error|
  error.prepend(RunboxErrorMessages)
end
