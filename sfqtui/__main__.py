from sfqtui.cli.app import main

main()
