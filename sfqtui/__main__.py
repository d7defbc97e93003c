from sfqtui.cli.app import main

if __name__ == "__main__":  # a spawned audit process imports this module too
    main()
